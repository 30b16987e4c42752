//! The `shell` tool: approval, the sandbox (and retrying or running without it only with the
//! user's approval), `exec_command_*` events, and the output the model sees.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::{AskForApproval, CallId, ExecCommandSource};
use schemars::JsonSchema;
use serde::Deserialize;

use super::ToolContext;
use super::builtin::BuiltinTool;
use super::command_runtime::{
    ExecCall, Placement, ask_exec, authorize, execute, model_output, patch_in_command,
    run_unsandboxed, run_without_sandbox, workdir,
};
use crate::sandbox::setup_failure;
use crate::turn_context::TurnStop;

/// `shell` (also called `container.exec`): runs an argv array once, to completion.
pub(crate) struct ShellTool;

impl BuiltinTool for ShellTool {
    type Args = ShellArgs;
    const NAME: &'static str = "shell";

    fn description(&self) -> &'static str {
        "Run a command and get its exit code and output. Pass the program and its \
            arguments as an array, e.g. [\"bash\", \"-lc\", \"ls -la\"]. Set `workdir` instead of \
            using `cd`. Commands run under the user's approval policy and sandbox; if a command \
            needs more access than the sandbox grants, set `with_escalated_permissions` and say \
            why in `justification`."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "command": {"type": "array", "items": {"type": "string"}, "description": "Program and arguments."},
                "workdir": {"type": "string", "description": "Working directory; defaults to the session's."},
                "timeout_ms": {"type": "number", "description": "Kill the command after this many milliseconds."},
                "with_escalated_permissions": {"type": "boolean", "description": "Ask the user to run this outside the sandbox."},
                "justification": {"type": "string", "description": "Why escalation is needed, shown to the user."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    async fn run(&self, ctx: &ToolContext, args: ShellArgs) -> Result<String, TurnStop> {
        shell(ctx, ctx.call_id().as_str(), args).await
    }
}

/// Default time a command may run before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

// The model's arguments (its schema is written out in the tool, in Codex's shape).
#[derive(Deserialize, JsonSchema)]
pub(crate) struct ShellArgs {
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
async fn shell(ctx: &ToolContext, call_id: &str, args: ShellArgs) -> Result<String, TurnStop> {
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
