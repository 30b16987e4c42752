//! The user's own command in a thread (the TUI's `!cmd`): run in the thread's working
//! directory under the thread's file system and network policy, shown as a command item, and
//! noted in the history so the model knows what the user ran and saw.
//!
//! Unlike a model's command it is not isolated from the user's own processes and local
//! sockets: `!docker ps`, `!ssh-add -l` and `!ps` work as in the user's terminal (Codex runs
//! it with no sandbox at all). What it may write stays what the thread allows, since a client
//! is held to the sandbox its server was given.

use std::time::Duration;

use keel_protocol::{CallId, EventMsg, ExecCommandEndEvent, ExecCommandSource, ExecCommandStatus};

use super::ToolContext;
use super::command_runtime::ExecCall;
use crate::models::ResponseItem;
use crate::processes::{ExecOutcome, truncate_for_model};
use crate::turn_context::TurnStop;

/// The most of a command's output the history note keeps.
const NOTE_OUTPUT_MAX_BYTES: usize = 10 * 1024;
const NOTE_OUTPUT_MAX_LINES: usize = 256;

/// Runs `command` with the user's shell as a login shell; returns the note for the
/// history. A command the sandbox cannot confine here is refused (the item says why),
/// never run unconfined.
pub(crate) async fn user_shell(
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
) -> Result<ResponseItem, TurnStop> {
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|shell| !shell.is_empty())
        .unwrap_or_else(|| "/bin/bash".to_string());
    let call = ExecCall {
        call_id: CallId::new(format!("user-shell-{}", uuid::Uuid::now_v7())),
        argv: vec![shell, "-lc".to_string(), command.to_string()],
        cwd: ctx.turn.cwd.clone(),
        timeout,
        process_id: None,
        source: ExecCommandSource::UserShell,
    };
    let outcome = match super::command_runtime::sandbox_command(ctx) {
        Ok(sandbox) => {
            let sandbox = sandbox.map(crate::sandbox::SandboxCommand::for_user_command);
            super::command_runtime::execute(ctx, &call, sandbox.as_ref()).await?
        }
        Err(err) => {
            let reason = format!(
                "not run: the thread's sandbox cannot confine commands here ({err}); \
                 change the thread's sandbox to danger-full-access to run it unconfined"
            );
            refused(ctx, &call, &reason).await
        }
    };
    Ok(note(command, &outcome))
}

/// Reports a command that was not started as a failed command item.
async fn refused(ctx: &ToolContext, call: &ExecCall, reason: &str) -> ExecOutcome {
    let parsed_cmd = super::command_runtime::announce_begin(ctx, call, call.source, None).await;
    let outcome = ExecOutcome {
        exit_code: -1,
        stdout: String::new(),
        stderr: reason.to_string(),
        aggregated: reason.to_string(),
        duration: Duration::ZERO,
        timed_out: false,
    };
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::ExecCommandEnd(ExecCommandEndEvent {
                call_id: call.call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                command: call.argv.clone(),
                cwd: call.cwd.clone(),
                parsed_cmd,
                source: call.source,
                process_id: None,
                stdout: String::new(),
                stderr: reason.to_string(),
                aggregated_output: reason.to_string(),
                exit_code: -1,
                duration: Duration::ZERO,
                formatted_output: reason.to_string(),
                status: ExecCommandStatus::Failed,
            }),
        )
        .await;
    outcome
}
/// What the model is told the user ran and saw.
fn note(command: &str, outcome: &ExecOutcome) -> ResponseItem {
    let mut output = truncate_for_model(
        &outcome.aggregated,
        NOTE_OUTPUT_MAX_BYTES,
        NOTE_OUTPUT_MAX_LINES,
    );
    if outcome.timed_out {
        output.push_str("\n(the command timed out and was stopped)");
    }
    ResponseItem::user_text(format!(
        "<user_shell_command>\n<command>\n{command}\n</command>\n<result>\nExit code: {}\n\
         Duration: {:.1} seconds\nOutput:\n{output}\n</result>\n</user_shell_command>",
        outcome.exit_code,
        outcome.duration.as_secs_f64(),
    ))
}
