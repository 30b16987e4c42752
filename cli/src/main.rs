//! `keel`: the command-line front end to the Keel engine and its servers.
//!
//! Exit codes: 0 on success, 1 when the task failed or was interrupted, 2 on bad usage or
//! configuration. Every error is printed on stderr as `keel: ` and its cause chain.

mod doctor;
mod exec;
mod failure;
mod mcp_server;
mod provider_models;
mod sandbox;
mod servers;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Run a command under the sandbox the engine uses for model commands.
    Sandbox(sandbox::SandboxArgs),
    /// Serve the app-server protocol (threads, turns, items) on stdio or a websocket.
    AppServer(servers::AppServerCommand),
    /// Serve the exec-server protocol (process control) on stdio or a websocket.
    ExecServer(keel_exec_server::ExecServerArgs),
    /// Serve MCP on stdio: Keel as the `codex` and `codex-reply` tools.
    McpServer(mcp_server::McpServerArgs),
    /// Check the setup (config, provider, sandbox, MCP servers, hooks, skills) without
    /// running a model; exits 1 when something would stop a run.
    Doctor(doctor::DoctorArgs),
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
            Command::Sandbox(args) => sandbox::run(args).await,
            Command::AppServer(command) => servers::app_server(command).await,
            Command::ExecServer(args) => servers::exec_server(args).await,
            Command::McpServer(args) => mcp_server::run(args).await,
            Command::Doctor(args) => doctor::run(args).await,
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
