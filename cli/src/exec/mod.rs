//! `keel exec`: run one task headless, as a client of the in-process app-server.
//!
//! It starts (or resumes) a thread, starts one turn, renders the notifications, and ends on
//! `turn/completed` for its own thread and turn. Sub-agent threads' notifications are not
//! printed (the human stream counts them); on exit the sub-agents are shut down with the
//! in-process server. No one is there to answer approval requests,
//! so the approval policy is `never` unless `--full-auto` says otherwise; any request that
//! still arrives is declined.

mod oss;
mod outcome;
mod render;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use keel_app_server::{EventDelivery, InProcessAppServerClient, InProcessEvent, ServerConfig};
use keel_core::{Config, ConfigError, ConfigOverrides, find_keel_home, parse_cli_override};
use keel_protocol::app_server::{
    ClientInfo, ServerRequest, ThreadListParams, ThreadOverrides, ThreadResumeParams,
    ThreadStartParams, ThreadStartResponse, TurnInterruptParams, TurnStartParams, UserInput,
    client_request,
};
use keel_protocol::{AskForApproval, MethodTable, SandboxMode};

use crate::failure::usage;
use outcome::{TurnOutcome, turn_outcome};
use render::HumanRenderer;

/// The model `--oss` runs when `-m` names none (Codex's default).
const DEFAULT_OSS_MODEL: &str = "gpt-oss:20b";
/// The same model as LM Studio names it.
const DEFAULT_LMSTUDIO_MODEL: &str = "openai/gpt-oss-20b";

/// The local servers `--local-provider` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LocalProvider {
    /// Ollama (or any server at `CODEX_OSS_BASE_URL`).
    Ollama,
    /// LM Studio's server on localhost:1234.
    Lmstudio,
}

/// Arguments of `keel exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task. `-` (or nothing, when stdin is not a terminal) reads it from stdin.
    #[arg(value_name = "PROMPT")]
    prompt: Option<String>,

    /// The model to use.
    #[arg(short = 'm', long)]
    model: Option<String>,

    /// Working directory of the task.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,

    /// A configuration override, `key.path=value` (value parsed as TOML). Repeatable.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,

    /// A profile from config.toml.
    #[arg(short = 'p', long)]
    profile: Option<String>,

    /// Sandbox for model commands.
    #[arg(short = 's', long, value_enum)]
    sandbox: Option<SandboxArg>,

    /// Low-friction automation: workspace-write sandbox, approvals only on request.
    #[arg(long)]
    full_auto: bool,

    /// Use the local open-source model provider (`model_provider = "oss"`: an
    /// Ollama-compatible server at `CODEX_OSS_BASE_URL`, or localhost port `CODEX_OSS_PORT`,
    /// default 11434), with model `gpt-oss:20b` unless `-m` names another.
    #[arg(long)]
    oss: bool,

    /// Which local server `--oss` talks to: `ollama` (the default; `CODEX_OSS_BASE_URL`
    /// or `CODEX_OSS_PORT` move it) or `lmstudio` (localhost:1234, model
    /// `openai/gpt-oss-20b` unless `-m` names another). Implies `--oss`.
    #[arg(long, value_enum, value_name = "SERVER")]
    local_provider: Option<LocalProvider>,

    /// An image to attach to the prompt (PNG, JPEG, GIF or WebP). Repeatable.
    #[arg(short = 'i', long = "image", value_name = "FILE")]
    images: Vec<PathBuf>,

    /// A JSON Schema file the final answer must match (sent to the model as the response
    /// format), as Codex's `exec --output-schema`.
    #[arg(long = "output-schema", value_name = "FILE")]
    output_schema: Option<PathBuf>,

    /// Also write the agent's last message to FILE when the turn completes (as `codex exec
    /// -o`); works with `--json` too.
    #[arg(short = 'o', long = "output-last-message", value_name = "FILE")]
    output_last_message: Option<PathBuf>,

    /// Print every event as JSON Lines on stdout instead of the readable stream.
    #[arg(long)]
    json: bool,

    /// Print Keel's own event stream on stdout: every app-server notification of the thread
    /// (streaming deltas included) as one JSON line `{"method", "params"}`.
    #[arg(long, conflicts_with = "json")]
    app_server_events: bool,

    /// Run enabled hooks even when their definitions are not trusted (for automation whose
    /// hooks were vetted). Hooks of an untrusted project still do not load.
    #[arg(long)]
    dangerously_bypass_hook_trust: bool,

    /// Accepted for compatibility with Codex's `exec`; Keel does not require a git repository.
    #[arg(long, hide = true)]
    skip_git_repo_check: bool,

    #[command(subcommand)]
    resume: Option<ResumeCommand>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SandboxArg {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

#[derive(Debug, Subcommand)]
enum ResumeCommand {
    /// Continue a recorded conversation.
    Resume {
        /// The conversation id to resume (with `--last`, the first word is the prompt).
        id: Option<String>,
        /// Resume the most recent conversation.
        #[arg(long)]
        last: bool,
        /// The follow-up task (`-` reads stdin).
        #[arg(value_name = "PROMPT")]
        prompt: Option<String>,
    },
}

/// Longest `keel exec` waits at its end for the session to shut down (its `SessionEnd`
/// hooks).
const SESSION_END_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `keel exec` and returns the process exit code.
pub async fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let mut cli_overrides = Vec::new();
    for raw in &args.config_overrides {
        cli_overrides.push(parse_cli_override(raw)?);
    }
    if let Some(profile) = &args.profile {
        cli_overrides.push(("profile".to_string(), toml::Value::String(profile.clone())));
    }
    if args.dangerously_bypass_hook_trust {
        eprintln!(
            "warning: --dangerously-bypass-hook-trust is on: enabled hooks run without review"
        );
        cli_overrides.push(("bypass_hook_trust".to_string(), toml::Value::Boolean(true)));
    }
    let mut model = args.model.clone();
    let local = args
        .local_provider
        .or(args.oss.then_some(LocalProvider::Ollama));
    if let Some(local) = local {
        let (provider, default_model) = match local {
            LocalProvider::Ollama => (keel_core::config::OSS_PROVIDER_ID, DEFAULT_OSS_MODEL),
            LocalProvider::Lmstudio => (
                keel_core::config::LMSTUDIO_PROVIDER_ID,
                DEFAULT_LMSTUDIO_MODEL,
            ),
        };
        cli_overrides.push((
            "model_provider".to_string(),
            toml::Value::String(provider.to_string()),
        ));
        model.get_or_insert_with(|| default_model.to_string());
    }
    let process_cwd = std::env::current_dir().context("reading the current directory")?;
    let cwd = match &args.cwd {
        Some(dir) => checked_cwd(dir)?,
        None => process_cwd.clone(),
    };
    let mut overrides = ThreadOverrides {
        model,
        cwd: Some(cwd.clone()),
        sandbox: args.sandbox.map(|s| match s {
            SandboxArg::ReadOnly => SandboxMode::ReadOnly,
            SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
        }),
        approval_policy: Some(AskForApproval::Never),
        ..ThreadOverrides::default()
    };
    if args.full_auto {
        overrides.approval_policy = Some(AskForApproval::OnRequest);
        overrides.sandbox.get_or_insert(SandboxMode::WorkspaceWrite);
    }
    let config = check_config(&home, &cli_overrides, &overrides)?;
    if let Some(local) = local {
        oss::check_local_server(&config, local).await?;
    }
    // Whoever reads stdout (a pipe to a script, a log) gets every event: a slow reader slows
    // the run down rather than thinning the stream.
    let client = InProcessAppServerClient::start_with_delivery(
        ServerConfig {
            keel_home: home.clone(),
            cli_overrides,
            cwd: process_cwd,
        },
        ClientInfo {
            name: "keel_exec".to_string(),
            title: None,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        None,
        EventDelivery::WaitForConsumer,
    )
    .await?;

    let (prompt_arg, thread) = match args.resume {
        None => {
            let thread = client
                .request::<client_request::ThreadStart>(ThreadStartParams {
                    dynamic_tools: None,
                    overrides,
                    ephemeral: None,
                })
                .await?;
            (args.prompt, thread)
        }
        Some(ResumeCommand::Resume {
            mut id,
            last,
            mut prompt,
        }) => {
            if last && prompt.is_none() {
                prompt = id.take();
            }
            let thread_id = if last {
                let list = client
                    .request::<client_request::ThreadList>(ThreadListParams {
                        limit: Some(1),
                        ..ThreadListParams::default()
                    })
                    .await?;
                list.data.into_iter().next().map(|t| t.id).ok_or_else(|| {
                    usage(format!(
                        "no recorded conversations under {}",
                        home.display()
                    ))
                })?
            } else {
                id.ok_or_else(|| usage("`keel exec resume` needs a conversation id or --last"))?
            };
            overrides.cwd = args.cwd.as_ref().map(|_| cwd.clone());
            let thread = client
                .request::<client_request::ThreadResume>(ThreadResumeParams {
                    thread_id,
                    overrides,
                })
                .await?;
            (prompt.or(args.prompt), thread)
        }
    };
    let prompt = read_prompt(prompt_arg)?;
    let mut input = vec![UserInput::Text {
        text: prompt,
        text_elements: Vec::new(),
    }];
    for image in &args.images {
        let path =
            std::path::absolute(image).with_context(|| format!("resolving {}", image.display()))?;
        if !path.is_file() {
            return Err(usage(format!("-i {}: no such file", image.display())));
        }
        input.push(UserInput::LocalImage { path });
    }
    let output_schema = match &args.output_schema {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|err| usage(format!("--output-schema {}: {err}", file.display())))?;
            let schema: serde_json::Value = serde_json::from_str(&text).map_err(|err| {
                usage(format!(
                    "--output-schema {}: not JSON: {err}",
                    file.display()
                ))
            })?;
            if !schema.is_object() {
                return Err(usage(format!(
                    "--output-schema {}: a JSON Schema is an object",
                    file.display()
                )));
            }
            Some(schema)
        }
        None => None,
    };
    drive(
        &client,
        thread,
        input,
        output_schema,
        args.json || args.app_server_events,
        args.output_last_message.as_deref(),
    )
    .await
}

/// The `-C` directory, absolute; a usage error when it is not an existing directory.
fn checked_cwd(dir: &std::path::Path) -> anyhow::Result<PathBuf> {
    let absolute =
        std::path::absolute(dir).with_context(|| format!("resolving {}", dir.display()))?;
    match std::fs::metadata(&absolute) {
        Ok(meta) if meta.is_dir() => Ok(absolute),
        Ok(_) => Err(usage(format!("-C {}: not a directory", dir.display()))),
        Err(err) => Err(usage(format!("-C {}: {err}", dir.display()))),
    }
}

/// Loads the configuration the thread will run with, before anything starts: a bad file,
/// override or missing API key is a usage error (exit 2) that says what to do, and unknown
/// keys are shown as warnings.
fn check_config(
    home: &std::path::Path,
    cli_overrides: &[(String, toml::Value)],
    overrides: &ThreadOverrides,
) -> anyhow::Result<Config> {
    let config = Config::load(
        home,
        cli_overrides.to_vec(),
        ConfigOverrides {
            model: overrides.model.clone(),
            cwd: overrides.cwd.clone(),
            approval_policy: overrides.approval_policy,
            sandbox_mode: overrides.sandbox,
            ..ConfigOverrides::default()
        },
    )?;
    for warning in &config.warnings {
        eprintln!("keel: warning: {warning}");
    }
    match config
        .model_provider
        .api_key(&keel_core::config::process_env)
    {
        Ok(_) => Ok(config),
        Err(err @ ConfigError::MissingEnvVar { .. }) => Err(usage(format!(
            "{err}\n\
             Ways to give Keel a model:\n  \
             - OpenAI: export OPENAI_API_KEY=... (keys: https://platform.openai.com/api-keys)\n  \
             - a local Ollama-compatible server on localhost:11434: \
             keel exec --oss [-m <model>] ...\n  \
             - no model at all: the mock model of the quick start in README.md\n\
             Providers are configured in {}",
            config.config_file().display()
        ))),
        Err(err) => Err(err.into()),
    }
}

fn read_prompt(arg: Option<String>) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    let from_stdin = match arg.as_deref() {
        Some("-") => true,
        Some(_) => false,
        None if !std::io::stdin().is_terminal() => true,
        None => {
            return Err(usage(
                "no prompt given: pass it as an argument or `-` to read stdin",
            ));
        }
    };
    let prompt = if from_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the prompt from stdin")?;
        text
    } else {
        arg.unwrap_or_default()
    };
    if prompt.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// Starts the turn and renders notifications until it completes.
async fn drive(
    client: &InProcessAppServerClient,
    thread: ThreadStartResponse,
    input: Vec<UserInput>,
    output_schema: Option<serde_json::Value>,
    json: bool,
    last_message_file: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let mut renderer = HumanRenderer::default();
    let stdout = std::io::stdout();
    if !json {
        renderer.thread_started(&thread);
    }
    let thread_id = thread.thread.id.clone();
    // Listening from before the turn starts, on one stream that queues deliveries: a Ctrl-C
    // is never lost between two waits.
    let mut interrupts = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")?;
    let turn = client
        .request::<client_request::TurnStart>(TurnStartParams {
            thread_id: thread_id.clone(),
            input,
            cwd: None,
            approval_policy: None,
            sandbox_policy: None,
            permissions: None,
            model: None,
            effort: None,
            output_schema,
        })
        .await?;
    let turn_id = turn.turn.id;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = client.next_event() => event.context("the in-process app-server stopped")?,
            _ = interrupts.recv() => {
                if interrupted {
                    // A second Ctrl-C: stop waiting for the turn to wind down (the commands'
                    // process groups are killed on the way out).
                    eprintln!("keel: interrupted again; exiting");
                    std::process::exit(130);
                }
                interrupted = true;
                eprintln!("interrupting…");
                client
                    .request::<client_request::TurnInterrupt>(TurnInterruptParams {
                        thread_id: thread_id.clone(),
                        turn_id: turn_id.clone(),
                    })
                    .await?;
                continue;
            }
        };
        match event {
            InProcessEvent::Notification(notification) => {
                // `keel exec` follows its own thread; sub-agents show only as a count.
                if notification
                    .thread_id()
                    .is_some_and(|id| id != thread_id.as_str())
                {
                    if !json {
                        renderer.sub_agent_notification(&notification);
                    }
                    continue;
                }
                if json {
                    let (method, params) = notification.clone().into_method_and_params()?;
                    write_line(
                        &stdout,
                        &serde_json::json!({"method": method, "params": params}).to_string(),
                    )?;
                } else {
                    renderer.notification(&notification);
                }
                if let Some(outcome) = turn_outcome(&notification, &thread_id, &turn_id) {
                    if let (Some(file), TurnOutcome::Completed(Some(message))) =
                        (last_message_file, &outcome)
                    {
                        std::fs::write(file, message).with_context(|| {
                            format!("writing the last message to {}", file.display())
                        })?;
                    }
                    match &outcome {
                        TurnOutcome::Completed(Some(message)) if !json => {
                            write_line(&stdout, message)?
                        }
                        TurnOutcome::Interrupted if !json => eprintln!("keel: turn interrupted"),
                        _ => {}
                    }
                    // The session ends with the run: its end-of-session hooks finish first.
                    client.shutdown(SESSION_END_LIMIT).await;
                    return Ok(ExitCode::from(outcome.exit_code()));
                }
            }
            InProcessEvent::ServerRequest {
                id,
                request: ServerRequest::ToolRequestUserInput(asked),
            } => {
                let questions: Vec<&str> = asked
                    .questions
                    .iter()
                    .map(|q| q.question.as_str())
                    .collect();
                eprintln!(
                    "the model asked: {}; keel exec has no user to ask, so it was told nobody \
                     answered",
                    questions.join(" / ")
                );
                client
                    .respond(id, serde_json::json!({"answers": {}}))
                    .await?;
            }
            InProcessEvent::ServerRequest {
                id,
                request: ServerRequest::McpServerElicitation(asked),
            } => {
                eprintln!(
                    "MCP server `{}` asked: {}; keel exec has no user to ask, so it declined",
                    asked.server_name, asked.message
                );
                client
                    .respond(id, serde_json::json!({"action": "decline"}))
                    .await?;
            }
            InProcessEvent::ServerRequest {
                id,
                request: ServerRequest::DynamicToolCall(call),
            } => {
                // keel exec registers no tools of its own, so no call should come here.
                let answer = keel_protocol::DynamicToolResponse::failure(format!(
                    "keel exec has no tool `{}`",
                    call.tool
                ));
                client.respond(id, serde_json::to_value(answer)?).await?;
            }
            InProcessEvent::ServerRequest { id, request } => {
                let what = match &request {
                    ServerRequest::DynamicToolCall(call) => format!("tool `{}`", call.tool),
                    ServerRequest::McpServerElicitation(_) => "an MCP question".to_string(),
                    ServerRequest::CommandExecutionRequestApproval(p) => {
                        format!("command `{}`", p.command.clone().unwrap_or_default())
                    }
                    ServerRequest::FileChangeRequestApproval(_) => "a patch".to_string(),
                    ServerRequest::ToolRequestUserInput(_) => "questions".to_string(),
                };
                eprintln!("approval needed for {what}; declined (keel exec cannot ask)");
                client
                    .respond(id, serde_json::json!({"decision": "decline"}))
                    .await?;
            }
            InProcessEvent::Lagged { skipped } => {
                // Not expected: this client waits for its reader instead of skipping.
                tracing::warn!("{skipped} streaming updates were skipped");
            }
        }
    }
}

/// Writes one line to stdout; a closed pipe (e.g. `| head`) ends output quietly.
fn write_line(stdout: &std::io::Stdout, line: &str) -> anyhow::Result<()> {
    let mut lock = stdout.lock();
    match writeln!(lock, "{line}").and_then(|()| lock.flush()) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(err.into()),
    }
}
