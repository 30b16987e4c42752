//! The one way a command runs, whoever asked for it (the model's `shell` or `exec_command`,
//! the user's `!cmd`, a tool's [`ToolContext::run_command`]): decide on approval, choose the
//! sandbox, run it with its `exec_command_begin` / `end` events, and run it again outside the
//! sandbox only when the sandbox could not be set up or the policy is `on-failure`, each time
//! with the user's approval.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::{
    AskForApproval, Base64Bytes, CallId, EventMsg, ExecApprovalRequestEvent, ExecCommandBeginEvent,
    ExecCommandEndEvent, ExecCommandOutputDeltaEvent, ExecCommandSource, ExecCommandStatus,
    ParsedCommand, ReviewDecision, SandboxPolicy,
};

use super::ToolContext;
use crate::approvals::{ExecDecision, decide_exec};
use crate::processes::{
    ExecOutcome, ExecStop, ProcessSpec, run_in_client_terminal, run_to_exit, truncate_for_model,
};
use crate::sandbox::{LINUX_SANDBOX_ARG0, SandboxCommand, SandboxError, probe_kernel};
use crate::telemetry::DecisionSource;
use crate::turn_context::TurnStop;

/// Output an editor's terminal keeps for the model: what Keel's own processes keep.
const CLIENT_TERMINAL_OUTPUT_BYTES: u64 = 1024 * 1024;

/// Caps on the output shown to the model.
const MODEL_OUTPUT_MAX_BYTES: usize = 10 * 1024;
const MODEL_OUTPUT_MAX_LINES: usize = 256;

/// The directory a command runs in: `workdir` taken from the turn's cwd, or that cwd.
pub(super) fn workdir(ctx: &ToolContext, workdir: Option<&std::path::Path>) -> PathBuf {
    match workdir {
        Some(dir) => ctx.turn.cwd.join(dir),
        None => ctx.turn.cwd.clone(),
    }
}

/// Applies the patch when `argv` is an `apply_patch` invocation (as models often send
/// one through a shell) and returns the text for the model; `None` for any other command.
pub(super) async fn patch_in_command(
    ctx: &ToolContext,
    call_id: &str,
    argv: &[String],
    cwd: &std::path::Path,
) -> Result<Option<String>, TurnStop> {
    let Some(found) = crate::apply_patch::maybe_parse_apply_patch_from_argv(argv) else {
        return Ok(None);
    };
    let output = match found {
        Ok(invocation) => {
            let cwd = match &invocation.workdir {
                Some(dir) => cwd.join(dir),
                None => cwd.to_path_buf(),
            };
            super::patch::apply_patch(ctx, call_id, &invocation.patch_text, &cwd).await?
        }
        Err(err) => format!("apply_patch: {err}"),
    };
    Ok(Some(output))
}

/// Decides whether and how `call` may run: approval first, then the sandbox. `Err` holds
/// the text telling the model why it did not run.
pub(super) async fn authorize(
    ctx: &ToolContext,
    call: &ExecCall,
    escalated: bool,
    justification: Option<&str>,
) -> Result<Result<Placement, String>, TurnStop> {
    let approved_for_session = ctx.host.is_approved_for_session(&call.argv);
    let decision = decide_exec(
        ctx.turn.approval_policy,
        &call.argv,
        escalated,
        justification,
        approved_for_session,
    );
    match decision {
        // The user saw and approved this exact command: it runs as approved, outside the
        // sandbox (as in Codex).
        ExecDecision::Run if approved_for_session => {
            ctx.trace
                .decision(ReviewDecision::ApprovedForSession, DecisionSource::Config);
            return Ok(Ok(Placement::Unsandboxed));
        }
        ExecDecision::Run => ctx
            .trace
            .decision(ReviewDecision::Approved, DecisionSource::Config),
        ExecDecision::Reject(reason) => {
            ctx.trace
                .decision(ReviewDecision::Denied, DecisionSource::Config);
            ctx.trace.mark_failed();
            return Ok(Err(reason));
        }
        ExecDecision::Ask(reason) => {
            return Ok(match ask_exec(ctx, call, reason).await? {
                Some(refusal) => Err(refusal),
                None => Ok(Placement::Unsandboxed),
            });
        }
    }
    match sandbox_command(ctx) {
        Ok(Some(sandbox)) => Ok(Ok(Placement::Sandboxed(sandbox))),
        Ok(None) => Ok(Ok(Placement::Unsandboxed)),
        Err(err) => Ok(allow_without_sandbox(ctx, call, &err.to_string())
            .await?
            .map(|()| Placement::Unsandboxed)),
    }
}

/// The helper invocation for this turn's sandbox policy; `None` when the policy is
/// `danger-full-access`, an error when the command cannot be confined here.
pub(super) fn sandbox_command(ctx: &ToolContext) -> Result<Option<SandboxCommand>, SandboxError> {
    let policy = &ctx.turn.sandbox_policy;
    if matches!(policy, SandboxPolicy::DangerFullAccess) {
        return Ok(None);
    }
    let program = ctx
        .turn
        .sandbox_executable
        .as_deref()
        .filter(|program| program.is_file())
        .ok_or(SandboxError::HelperNotFound)?;
    probe_kernel()?;
    SandboxCommand::new(
        program,
        policy,
        &ctx.turn.cwd,
        ctx.turn.sandbox_allow_git_writes,
    )
    .map(Some)
}

/// The sandbox cannot confine `call`: never run it silently. Ask the user when the
/// approval policy allows it, else tell the model.
pub(super) async fn run_without_sandbox(
    ctx: &ToolContext,
    call: &ExecCall,
    reason: &str,
) -> Result<String, TurnStop> {
    match allow_without_sandbox(ctx, call, reason).await? {
        Ok(()) => run_unsandboxed(ctx, call).await,
        Err(refusal) => Ok(refusal),
    }
}

/// Whether `call` may run outside the sandbox that cannot confine it: the user's answer,
/// or `Err` with the text for the model.
pub(super) async fn allow_without_sandbox(
    ctx: &ToolContext,
    call: &ExecCall,
    reason: &str,
) -> Result<Result<(), String>, TurnStop> {
    tracing::warn!(call_id = %call.call_id.as_str(), "sandbox unavailable: {reason}");
    if ctx.turn.approval_policy == AskForApproval::Never {
        let refusal = format!(
            "command not run: the sandbox is unavailable ({reason}), and the approval \
             policy `never` does not allow running commands outside it"
        );
        // The client hears it too, not only the model: nobody was asked, and nothing ran.
        ctx.host
            .send_event(
                &ctx.ids.sub_id,
                EventMsg::Warning(keel_protocol::WarningEvent {
                    message: format!("`{}`: {refusal}", call.argv.join(" ")),
                }),
            )
            .await;
        return Ok(Err(refusal));
    }
    let question = format!("the sandbox is unavailable ({reason}); run this command without it?");
    Ok(match ask_exec(ctx, call, Some(question)).await? {
        Some(refusal) => Err(format!("{refusal} (the sandbox is unavailable: {reason})")),
        None => Ok(()),
    })
}

/// Asks the user about `call`; `None` when approved, else the text for the model.
pub(super) async fn ask_exec(
    ctx: &ToolContext,
    call: &ExecCall,
    reason: Option<String>,
) -> Result<Option<String>, TurnStop> {
    let event = EventMsg::ExecApprovalRequest(ExecApprovalRequestEvent {
        call_id: call.call_id.clone(),
        turn_id: ctx.ids.turn_id.clone(),
        command: call.argv.clone(),
        cwd: call.cwd.clone(),
        reason,
        parsed_cmd: parse_command(&call.argv),
        process_id: call.process_id.map(|id| id.to_string()),
    });
    match ctx.wait_for_decision(&call.call_id, event).await? {
        ReviewDecision::Approved => Ok(None),
        ReviewDecision::ApprovedForSession => {
            ctx.host.approve_for_session(call.argv.clone());
            Ok(None)
        }
        ReviewDecision::Denied => Ok(Some("exec command rejected by user".to_string())),
        ReviewDecision::Abort => Err(TurnStop::Interrupted),
    }
}

pub(super) async fn run_unsandboxed(
    ctx: &ToolContext,
    call: &ExecCall,
) -> Result<String, TurnStop> {
    let outcome = execute(ctx, call, None).await?;
    Ok(model_output(
        &outcome,
        call.timeout,
        ctx.turn.tool_output_token_limit,
    ))
}

/// Says `call` starts (`exec_command_begin`), as `source`, under `process_id` when it stays
/// running; returns the parsed command, which its end event repeats.
pub(super) async fn announce_begin(
    ctx: &ToolContext,
    call: &ExecCall,
    source: ExecCommandSource,
    process_id: Option<String>,
) -> Vec<ParsedCommand> {
    let parsed_cmd = parse_command(&call.argv);
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::ExecCommandBegin(ExecCommandBeginEvent {
                call_id: call.call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                command: call.argv.clone(),
                cwd: call.cwd.clone(),
                parsed_cmd: parsed_cmd.clone(),
                source,
                process_id,
            }),
        )
        .await;
    parsed_cmd
}

/// Runs `call` (under `sandbox`, if given), reporting it with `exec_command_*` events.
pub(super) async fn execute(
    ctx: &ToolContext,
    call: &ExecCall,
    sandbox: Option<&SandboxCommand>,
) -> Result<ExecOutcome, TurnStop> {
    let ExecCall {
        call_id,
        argv,
        cwd,
        timeout,
        source,
        ..
    } = call;
    let parsed_cmd = announce_begin(ctx, call, *source, None).await;
    let launch = launch_argv(ctx, argv, cwd).await?;
    let spec = ProcessSpec {
        argv: sandbox.map_or_else(|| launch.clone(), |sandbox| sandbox.wrap(&launch)),
        arg0: sandbox.map(|_| LINUX_SANDBOX_ARG0.to_string()),
        cwd: cwd.clone(),
        env: ctx.turn.shell_env.clone(),
        tty: false,
        traceparent: ctx.trace.traceparent(),
    };
    let session = &ctx.host;
    let sub_id = &ctx.ids.sub_id;
    let layer = ctx.host.processes();
    let result = match layer.client_terminals() {
        // The editor shows the command live in its terminal: no output deltas.
        Some((conversation, terminals)) => {
            let command = crate::ClientCommand {
                call_id: call_id.clone(),
                argv: spec.argv,
                arg0: spec.arg0,
                cwd: spec.cwd,
                env: spec.env,
                output_byte_limit: CLIENT_TERMINAL_OUTPUT_BYTES,
            };
            run_in_client_terminal(
                terminals.as_ref(),
                conversation,
                command,
                *timeout,
                &ctx.cancel,
            )
            .await
        }
        None => {
            run_to_exit(layer, spec, *timeout, &ctx.cancel, |stream, bytes| {
                let delta = EventMsg::ExecCommandOutputDelta(ExecCommandOutputDeltaEvent {
                    call_id: call_id.clone(),
                    stream,
                    chunk: Base64Bytes::from(bytes),
                });
                async move { session.send_event(sub_id, delta).await }
            })
            .await
        }
    };
    let outcome = match result {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(ExecStop::Interrupted)) => return Err(TurnStop::Interrupted),
        Err(err) => ExecOutcome {
            exit_code: -1,
            stdout: String::new(),
            stderr: err.start_failure(&argv.join(" ")),
            aggregated: err.start_failure(&argv.join(" ")),
            duration: Duration::ZERO,
            timed_out: false,
        },
    };
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::ExecCommandEnd(ExecCommandEndEvent {
                call_id: call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                command: argv.clone(),
                cwd: cwd.clone(),
                parsed_cmd,
                source: *source,
                process_id: None,
                stdout: outcome.stdout.clone(),
                stderr: outcome.stderr.clone(),
                aggregated_output: outcome.aggregated.clone(),
                exit_code: outcome.exit_code,
                duration: outcome.duration,
                formatted_output: formatted_output(
                    &outcome,
                    *timeout,
                    ctx.turn.tool_output_token_limit,
                ),
                status: if outcome.exit_code == 0 {
                    ExecCommandStatus::Completed
                } else {
                    ExecCommandStatus::Failed
                },
            }),
        )
        .await;
    Ok(outcome)
}
/// A command call ready to run.
pub(super) struct ExecCall {
    pub call_id: CallId,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// The session id of an `exec_command` process (reserved before it is authorized, so
    /// its approval names it); `None` for `shell`.
    pub process_id: Option<i32>,
    /// Who asked for it (the model, or the user's `!command`).
    pub source: ExecCommandSource,
}

/// Where an authorized command runs.
pub(super) enum Placement {
    /// Confined by the sandbox helper.
    Sandboxed(SandboxCommand),
    /// As is (no sandbox policy, or the user approved running it outside).
    Unsandboxed,
}

/// The output as the model sees it: truncated, with a note when the command timed out.
fn formatted_output(outcome: &ExecOutcome, timeout: Duration, token_budget: usize) -> String {
    let mut shown = outcome.aggregated.clone();
    if outcome.timed_out {
        shown.push_str(&format!(
            "\ncommand timed out after {}ms",
            timeout.as_millis()
        ));
    }
    let max_bytes = MODEL_OUTPUT_MAX_BYTES.min(token_budget.saturating_mul(4));
    truncate_for_model(&shown, max_bytes, MODEL_OUTPUT_MAX_LINES)
}

/// The function output sent back to the model.
pub(super) fn model_output(
    outcome: &ExecOutcome,
    timeout: Duration,
    token_budget: usize,
) -> String {
    serde_json::json!({
        "output": formatted_output(outcome, timeout, token_budget),
        "metadata": {
            "exit_code": outcome.exit_code,
            "duration_seconds": (outcome.duration.as_secs_f64() * 10.0).round() / 10.0,
        }
    })
    .to_string()
}

/// A best-effort reading of a command for display.
pub(crate) fn parse_command(argv: &[String]) -> Vec<ParsedCommand> {
    let script = match argv {
        [shell, flag, script] if (flag == "-lc" || flag == "-c") && shell.ends_with("sh") => {
            script.clone()
        }
        _ => shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" ")),
    };
    let words = shlex::split(&script).unwrap_or_default();
    let program = words.first().map(String::as_str).unwrap_or_default();
    let last = words.iter().skip(1).rfind(|w| !w.starts_with('-')).cloned();
    let simple = !script.contains(['|', ';', '&', '>', '<']);
    let parsed = match program {
        "cat" | "head" | "tail" | "nl" if simple && last.is_some() => {
            let path = last.unwrap_or_default();
            ParsedCommand::Read {
                cmd: script.clone(),
                name: std::path::Path::new(&path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| path.clone()),
                path: Some(PathBuf::from(path)),
            }
        }
        "ls" | "tree" if simple => ParsedCommand::ListFiles {
            cmd: script.clone(),
            path: last,
        },
        "rg" | "grep" if simple => {
            let positional: Vec<&String> = words
                .iter()
                .skip(1)
                .filter(|w| !w.starts_with('-'))
                .collect();
            ParsedCommand::Search {
                cmd: script.clone(),
                query: positional.first().map(|s| s.to_string()),
                path: positional.get(1).map(|s| s.to_string()),
            }
        }
        _ => ParsedCommand::Unknown {
            cmd: script.clone(),
        },
    };
    vec![parsed]
}

/// `[bash, -lc, script]` as a non-login shell sourcing the conversation's snapshot of
/// the login environment, when snapshots are on and one could be taken.
pub(super) async fn launch_argv(
    ctx: &ToolContext,
    argv: &[String],
    cwd: &std::path::Path,
) -> Result<Vec<String>, TurnStop> {
    // The snapshot is a file on this host; a remote exec-server could not read it.
    if !ctx.turn.shell_snapshot || !ctx.host.processes().is_local() {
        return Ok(argv.to_vec());
    }
    let rewrite =
        ctx.host
            .shell_snapshots()
            .rewrite(argv, ctx.host.processes(), cwd, &ctx.turn.shell_env);
    // A cancel while the login shell is captured (the first command of a home, a changed
    // profile) stops at once: the capture is dropped (its process killed) and the command
    // never starts.
    tokio::select! {
        () = ctx.cancel.cancelled() => Err(TurnStop::Interrupted),
        rewritten = rewrite => Ok(rewritten.unwrap_or_else(|| argv.to_vec())),
    }
}
