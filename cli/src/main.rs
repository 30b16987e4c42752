//! `keel`: the command-line front end to the Keel engine and its servers.
//!
//! Exit codes: 0 on success, 1 when the task failed or was interrupted, 2 on bad usage or
//! configuration. Every error is printed on stderr as `keel: ` and its cause chain.

mod acp;
mod agent_job;
mod doctor;
mod exec;
mod failure;
mod features;
mod login;
mod mcp_config;
mod mcp_login;
mod mcp_server;
mod plugin;
mod provider_models;
mod queue;
mod review;
mod sandbox;
mod servers;
mod sessions;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Keel: an embeddable coding-agent engine.
#[derive(Debug, Parser)]
#[command(name = "keel", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless: progress on stderr, the final message on stdout.
    #[command(override_usage = "keel exec [OPTIONS] [PROMPT]\n       \
                                keel exec [OPTIONS] resume <ID> [PROMPT]\n       \
                                keel exec [OPTIONS] resume --last [PROMPT]\n       \
                                keel exec [OPTIONS] fork <ID> [PROMPT]",
              after_help = exec::EXEC_AFTER_HELP)]
    Exec(exec::ExecArgs),
    /// Review the working tree, a branch or a commit; the report on stdout, exit 3 when the
    /// reviewer judges the patch incorrect.
    #[command(after_help = review::REVIEW_AFTER_HELP)]
    Review(review::ReviewArgs),
    /// Run a command under the sandbox the engine uses for model commands.
    Sandbox(sandbox::SandboxArgs),
    /// Serve the app-server protocol (threads, turns, items) on stdio or a websocket.
    AppServer(servers::AppServerCommand),
    /// Serve the exec-server protocol (process control) on stdio or a websocket.
    ExecServer(keel_exec_server::ExecServerArgs),
    /// Serve MCP on stdio: Keel as the `codex` and `codex-reply` tools.
    McpServer(mcp_server::McpServerArgs),
    /// Serve the Agent Client Protocol on stdio, for editors (Zed, JetBrains IDEs, Neovim).
    Acp(acp::AcpArgs),
    /// Check the setup (config, provider, sandbox, MCP servers, hooks, skills) without
    /// running a model; exits 1 when something would stop a run.
    Doctor(doctor::DoctorArgs),
    /// List recorded sessions (of the current directory unless --all), newest first.
    Sessions(sessions::ListArgs),
    /// Archive a recorded session by id or thread name.
    Archive(sessions::SessionArg),
    /// Bring an archived session back by id or thread name.
    Unarchive(sessions::SessionArg),
    /// Delete a recorded session (live or archived) by id or thread name, for good.
    Delete(sessions::SessionArg),
    /// Drop a session's latest turns; with --files, restore the files they changed.
    Revert(sessions::RevertArgs),
    /// Apply the file changes of a session's last turn to this directory with `git apply`.
    Apply(sessions::ApplyArgs),
    /// Run agent jobs (one worker agent per CSV row) with workers in many processes, on a
    /// SQLite file or a shared PostgreSQL store.
    #[command(subcommand)]
    AgentJob(agent_job::AgentJobCommand),
    /// Manage the MCP servers in config.toml.
    #[command(subcommand)]
    Mcp(mcp_config::McpCommand),
    /// Install plugins from marketplaces, and manage the marketplaces.
    #[command(subcommand)]
    Plugin(plugin::PluginCommand),
    /// Inspect and switch the features in config.toml.
    #[command(subcommand)]
    Features(features::FeaturesCommand),
    /// Store an OpenAI API key in the Keel home (`--with-api-key`, key on stdin), or show
    /// whether one is stored (`status`).
    Login(login::LoginArgs),
    /// Remove the stored API key.
    Logout,
    /// Keep a message for a recorded thread, delivered as its next turn when it is idle;
    /// `--resume` resumes the thread and runs what is queued.
    Queue(queue::QueueArgs),
    /// Print a shell completion script.
    Completion {
        /// The shell.
        #[arg(value_enum, default_value_t = clap_complete::Shell::Bash)]
        shell: clap_complete::Shell,
    },
}

fn main() -> ExitCode {
    // Started as the sandbox helper (by the engine or `keel sandbox`): confine and exec,
    // before any thread exists.
    if keel_core::sandbox::invoked_as_sandbox_helper() {
        return keel_core::sandbox::run_linux_sandbox_main();
    }
    // Started as the process supervisor of a command (by the engine's exec-server).
    if let Some(status) = keel_exec_server::supervisor::dispatch() {
        return status;
    }
    let cli = Cli::parse();
    keel_exec_server::init_stderr_logging("warn");
    tracing::debug!(version = env!("CARGO_PKG_VERSION"), command = ?cli.command, "keel starting");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("keel: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Exec(args) => exec::run(args).await,
            Command::Review(args) => review::run(args).await,
            Command::Sandbox(args) => sandbox::run(args).await,
            Command::AppServer(command) => servers::app_server(command).await,
            Command::ExecServer(args) => servers::exec_server(args).await,
            Command::McpServer(args) => mcp_server::run(args).await,
            Command::Acp(args) => acp::run(args).await,
            Command::Doctor(args) => doctor::run(args).await,
            Command::Sessions(args) => sessions::list(args).await,
            Command::Archive(args) => sessions::archive(args).await,
            Command::Unarchive(args) => sessions::unarchive(args).await,
            Command::Delete(args) => sessions::delete(args).await,
            Command::Apply(args) => sessions::apply(args).await,
            Command::Revert(args) => sessions::revert(args).await,
            Command::AgentJob(command) => agent_job::run(command).await,
            Command::Mcp(command) => mcp_config::run(command).await,
            Command::Plugin(command) => plugin::run(command).await,
            Command::Features(command) => features::run(command).await,
            Command::Login(args) => login::login(args).await,
            Command::Logout => login::logout().await,
            Command::Queue(args) => queue::run(args).await,
            Command::Completion { shell } => {
                clap_complete::generate(shell, &mut Cli::command(), "keel", &mut std::io::stdout());
                Ok(ExitCode::SUCCESS)
            }
        }
    });
    // A stdio server's stdin reader may still be blocked in a read; do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => code,
        Err(err) => {
            failure::report(&err);
            failure::exit_code(&err)
        }
    }
}
