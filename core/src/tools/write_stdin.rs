//! The `write_stdin` tool: what the model sees of it; the process service behind it is
//! `unified_exec.rs`.

use super::ToolContext;
use super::builtin::BuiltinTool;
use super::unified_exec::{WriteStdinArgs, write_stdin};
use crate::turn_context::TurnStop;

/// `write_stdin`: types into, or polls, a process `exec_command` left running.
pub(crate) struct WriteStdinTool;

impl BuiltinTool for WriteStdinTool {
    type Args = WriteStdinArgs;
    const NAME: &'static str = "write_stdin";

    fn description(&self) -> &'static str {
        "Write characters to a running exec_command session and return the \
            output that follows. Leave `chars` empty to wait for more output; the call returns \
            as soon as the process exits."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "session_id": {"type": "number", "description": "The session ID exec_command returned."},
                "chars": {"type": "string", "description": "What to type (include \\n to press enter); empty to poll."},
                "yield_time_ms": {"type": "number", "description": "How long to wait for output before returning."},
                "max_output_tokens": {"type": "number", "description": "Cap on the output returned; the middle is cut beyond it."}
            },
            "required": ["session_id"],
            "additionalProperties": false
        })
    }

    async fn run(&self, ctx: &ToolContext, args: WriteStdinArgs) -> Result<String, TurnStop> {
        write_stdin(ctx, args).await
    }
}
