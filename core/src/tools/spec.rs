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

/// The `exec_command` tool: start a process and read what it prints within a time budget.
pub(crate) fn exec_command_tool() -> Value {
    json!({
        "type": "function",
        "name": "exec_command",
        "description": "Run a shell command and return its output. If the command is still \
            running when `yield_time_ms` has passed, the result gives a session ID: call \
            `write_stdin` with it to poll for more output or, when started with `tty: true`, to \
            type into it (a REPL, a prompt, a dev server). Commands run under the user's \
            approval policy and sandbox; to ask for more access set `sandbox_permissions` to \
            `require_escalated` and say why in `justification`.",
        "strict": false,
        "parameters": {
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
        }
    })
}

/// The `write_stdin` tool: type into a running session, or poll it for output.
pub(crate) fn write_stdin_tool() -> Value {
    json!({
        "type": "function",
        "name": "write_stdin",
        "description": "Write characters to a running exec_command session and return the \
            output that follows. Leave `chars` empty to wait for more output; the call returns \
            as soon as the process exits.",
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "session_id": {"type": "number", "description": "The session ID exec_command returned."},
                "chars": {"type": "string", "description": "What to type (include \\n to press enter); empty to poll."},
                "yield_time_ms": {"type": "number", "description": "How long to wait for output before returning."},
                "max_output_tokens": {"type": "number", "description": "Cap on the output returned; the middle is cut beyond it."}
            },
            "required": ["session_id"],
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

/// The `request_user_input` tool: ask the user questions and wait for the answers.
pub(crate) fn request_user_input_tool() -> Value {
    json!({
        "type": "function",
        "name": "request_user_input",
        "description": "Ask the user one or more short questions when you cannot go on \
            without their decision (a choice between approaches, a missing fact). Offer \
            options where you can. Returns the answers by question id; an empty result means \
            nobody could answer, so decide yourself and say what you assumed.",
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Your id for the question."},
                            "header": {"type": "string", "description": "A heading of a few words."},
                            "question": {"type": "string"},
                            "options": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string"},
                                        "description": {"type": "string"}
                                    },
                                    "required": ["label", "description"],
                                    "additionalProperties": false
                                }
                            }
                        },
                        "required": ["id", "header", "question", "options"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        }
    })
}
