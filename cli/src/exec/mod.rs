//! `keel exec`: run one task headless.
//!
//! No one is there to answer approval requests, so the approval policy is `never` unless the
//! configuration or `--full-auto` says otherwise; any request that still arrives is denied.

mod render;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use keel_core::{
    Config, ConfigOverrides, ConversationManager, NewConversation, find_keel_home,
    find_rollout_path, list_conversations, parse_cli_override,
};
use keel_protocol::{
    AskForApproval, ConversationId, EventMsg, InputItem, Op, ReviewDecision, SandboxMode,
};

use render::HumanRenderer;

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

    /// Print every event as JSON Lines on stdout instead of the readable stream.
    #[arg(long)]
    json: bool,

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

/// Runs `keel exec` and returns the process exit code.
pub async fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let mut cli_overrides = Vec::new();
    for raw in &args.config_overrides {
        cli_overrides.push(parse_cli_override(raw)?);
    }
    let mut overrides = ConfigOverrides {
        model: args.model.clone(),
        config_profile: args.profile.clone(),
        cwd: args.cwd.clone(),
        sandbox_mode: args.sandbox.map(|s| match s {
            SandboxArg::ReadOnly => SandboxMode::ReadOnly,
            SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
        }),
        approval_policy: Some(AskForApproval::Never),
        ..ConfigOverrides::default()
    };
    if args.full_auto {
        overrides.approval_policy = Some(AskForApproval::OnRequest);
        overrides
            .sandbox_mode
            .get_or_insert(SandboxMode::WorkspaceWrite);
    }
    let config = Config::load(&home, cli_overrides, overrides)?;
    let manager = ConversationManager::new();

    let (prompt_arg, new) = match args.resume {
        None => (args.prompt, manager.new_conversation(config).await?),
        Some(ResumeCommand::Resume {
            mut id,
            last,
            mut prompt,
        }) => {
            if last && prompt.is_none() {
                prompt = id.take();
            }
            let path = if last {
                list_conversations(&home, 1, None)
                    .await?
                    .items
                    .into_iter()
                    .next()
                    .map(|s| s.path)
                    .with_context(|| {
                        format!("no recorded conversations under {}", home.display())
                    })?
            } else {
                let Some(id) = id else {
                    bail!("`keel exec resume` needs a conversation id or --last");
                };
                let id: ConversationId = id.parse()?;
                find_rollout_path(&home, id)
                    .await?
                    .with_context(|| format!("no recorded conversation with id {id}"))?
            };
            let prompt = prompt.or(args.prompt);
            (prompt, manager.resume_conversation(config, &path).await?)
        }
    };
    let prompt = read_prompt(prompt_arg)?;
    drive(new, prompt, args.json).await
}

fn read_prompt(arg: Option<String>) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    let from_stdin = match arg.as_deref() {
        Some("-") => true,
        Some(_) => false,
        None if !std::io::stdin().is_terminal() => true,
        None => bail!("no prompt given: pass it as an argument or `-` to read stdin"),
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
        bail!("the prompt is empty");
    }
    Ok(prompt)
}

/// Submits the task and renders events until the turn ends.
async fn drive(new: NewConversation, prompt: String, json: bool) -> anyhow::Result<ExitCode> {
    let conversation = new.conversation;
    let mut renderer = HumanRenderer::default();
    let stdout = std::io::stdout();
    if json {
        let line = serde_json::json!({"id": "", "msg": EventMsg::SessionConfigured(new.session_configured)});
        write_line(&stdout, &line.to_string())?;
    } else {
        renderer.session_configured(&new.session_configured);
    }
    conversation
        .submit(Op::UserInput {
            items: vec![InputItem::text(prompt)],
        })
        .await?;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = conversation.next_event() => event?,
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                eprintln!("interrupting…");
                conversation.submit(Op::Interrupt).await?;
                continue;
            }
        };
        if json {
            write_line(&stdout, &serde_json::to_string(&event)?)?;
        } else {
            renderer.event(&event.msg);
        }
        match event.msg {
            EventMsg::ExecApprovalRequest(request) => {
                conversation
                    .submit(Op::ExecApproval {
                        id: request.call_id,
                        decision: ReviewDecision::Denied,
                    })
                    .await?;
            }
            EventMsg::ApplyPatchApprovalRequest(request) => {
                conversation
                    .submit(Op::PatchApproval {
                        id: request.call_id,
                        decision: ReviewDecision::Denied,
                    })
                    .await?;
            }
            EventMsg::TaskComplete(done) => {
                if !json && let Some(message) = done.last_agent_message {
                    write_line(&stdout, &message)?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            EventMsg::TurnAborted(_) | EventMsg::Error(_) => return Ok(ExitCode::from(1)),
            _ => {}
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
