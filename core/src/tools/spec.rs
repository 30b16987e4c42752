//! Tool definitions offered to the model, in Responses API form.

use serde_json::{Value, json};

/// The `shell` tool: run a command given as an argv array.
pub(crate) fn shell_tool() -> Value {
    json!({
        "type": "function",
        "name": "shell",
        "description": "Run a command and get its exit code and output. Pass the program and its \
            arguments as an array, e.g. [\"bash\", \"-lc\", \"ls -la\"]. Set `workdir` instead of \
            using `cd`. Commands run under the user's approval policy and sandbox; if a command \
            needs more access than the sandbox grants, set `with_escalated_permissions` and say \
            why in `justification`.",
        "strict": false,
        "parameters": {
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
        }
    })
}

/// The `update_plan` tool: keep a visible step-by-step plan.
pub(crate) fn update_plan_tool() -> Value {
    json!({
        "type": "function",
        "name": "update_plan",
        "description": "Record the plan for the task as a list of steps with a status each \
            (pending, in_progress, completed). At most one step is in_progress. Call it again \
            whenever a step changes status; the user sees the plan.",
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "explanation": {"type": "string"},
                "plan": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        }
    })
}
