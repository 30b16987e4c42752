//! The `exec_command` tool: what the model sees of it; the process service behind it is
//! `unified_exec.rs`.

use super::ToolContext;
use super::builtin::BuiltinTool;
use super::unified_exec::{ExecCommandArgs, exec_command};
use crate::turn_context::TurnStop;

/// `exec_command`: starts a process and returns what it printed within a time budget.
pub(crate) struct ExecCommandTool;

impl BuiltinTool for ExecCommandTool {
    type Args = ExecCommandArgs;
    const NAME: &'static str = "exec_command";

    fn description(&self) -> &'static str {
        "Run a shell command and return its output. If the command is still \
            running when `yield_time_ms` has passed, the result gives a session ID: call \
            `write_stdin` with it to poll for more output or, when started with `tty: true`, to \
            type into it (a REPL, a prompt, a dev server). Commands run under the user's \
            approval policy and sandbox; to ask for more access set `sandbox_permissions` to \
            `require_escalated` and say why in `justification`."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "cmd": {"type": "string", "description": "The shell command to run."},
                "workdir": {"type": "string", "description": "Working directory; defaults to the session's."},
                "shell": {"type": "string", "description": "Shell program; defaults to bash."},
                "login": {"type": "boolean", "description": "Run as a login shell (default true)."},
                "tty": {"type": "boolean", "description": "Give the process a terminal so input can be written to it (default false)."},
                "yield_time_ms": {"type": "number", "description": "How long to wait for output before returning (default 10000)."},
                "max_output_tokens": {"type": "number", "description": "Cap on the output returned; the middle is cut beyond it."},
                "sandbox_permissions": {"type": "string", "description": "`use_default`, or `require_escalated` to ask to run outside the sandbox."},
                "justification": {"type": "string", "description": "Why escalation is needed, shown to the user."},
                "prefix_rule": {"type": "array", "items": {"type": "string"}, "description": "A command prefix you suggest the user approve for later commands."}
            },
            "required": ["cmd"],
            "additionalProperties": false
        })
    }

    async fn run(&self, ctx: &ToolContext, args: ExecCommandArgs) -> Result<String, TurnStop> {
        exec_command(ctx, ctx.call_id().as_str(), args).await
    }
}
