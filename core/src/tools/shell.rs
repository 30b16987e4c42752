//! The `shell` tool: approval, the sandbox (and retrying or running without it only with the
//! user's approval), `exec_command_*` events, and the output the model sees.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::{AskForApproval, CallId, ExecCommandSource};
use serde::Deserialize;

use super::ToolContext;
use super::command_runtime::{
    ExecCall, Placement, ask_exec, authorize, execute, model_output, patch_in_command,
    run_unsandboxed, run_without_sandbox, workdir,
};
use crate::sandbox::setup_failure;
use crate::turn_context::TurnStop;

super::builtin_tool!(
    /// `shell` (also called `container.exec`): runs an argv array once, to completion.
    ShellTool,
    "shell",
    super::spec::shell_tool(),
    |call, call_id, arguments| shell(call, &call_id, arguments).await
);

/// Default time a command may run before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Deserialize)]
struct ShellArgs {
    command: Vec<String>,
    #[serde(default)]
    workdir: Option<PathBuf>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    with_escalated_permissions: Option<bool>,
    #[serde(default)]
    justification: Option<String>,
}

/// Runs a `shell` call (or the patch it carries) and returns the text for the model.
async fn shell(ctx: &ToolContext, call_id: &str, arguments: &str) -> Result<String, TurnStop> {
    let args: ShellArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return Ok(format!("failed to parse shell arguments: {err}")),
    };
    if args.command.is_empty() {
        return Ok("shell: `command` must not be empty".to_string());
    }
    let cwd = workdir(ctx, args.workdir.as_deref());
    if let Some(output) = patch_in_command(ctx, call_id, &args.command, &cwd).await? {
        return Ok(output);
    }
    let call = ExecCall {
        call_id: CallId::new(call_id),
        argv: args.command,
        cwd,
        timeout: args
            .timeout_ms
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
        process_id: None,
        source: ExecCommandSource::Agent,
    };
    let policy = ctx.turn.approval_policy;
    let placement = authorize(
        ctx,
        &call,
        args.with_escalated_permissions.unwrap_or(false),
        args.justification.as_deref(),
    )
    .await?;
    let sandbox = match placement {
        Ok(Placement::Sandboxed(sandbox)) => sandbox,
        Ok(Placement::Unsandboxed) => return run_unsandboxed(ctx, &call).await,
        Err(refusal) => return Ok(refusal),
    };
    let outcome = execute(ctx, &call, Some(&sandbox)).await?;
    if let Some(reason) = setup_failure(outcome.exit_code, &outcome.stderr) {
        return run_without_sandbox(ctx, &call, &reason).await;
    }
    if outcome.exit_code != 0 && !outcome.timed_out && policy == AskForApproval::OnFailure {
        let reason = format!(
            "the command failed in the sandbox (exit code {}); run it again without the \
             sandbox?",
            outcome.exit_code
        );
        if ask_exec(ctx, &call, Some(reason)).await?.is_none() {
            return run_unsandboxed(ctx, &call).await;
        }
    }
    Ok(model_output(
        &outcome,
        call.timeout,
        ctx.turn.tool_output_token_limit,
    ))
}
