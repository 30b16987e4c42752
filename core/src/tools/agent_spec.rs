//! Definitions of the sub-agent and agent-job tools, with Codex's parameter names.

use serde_json::{Value, json};

/// The `items` parameter: typed pieces of input.
fn input_items_schema() -> Value {
    json!({
        "type": "array",
        "description": "Input pieces, instead of or after `message`.",
        "items": {
            "type": "object",
            "properties": {
                "type": {"type": "string", "description": "`text`, `image` or `local_image`."},
                "text": {"type": "string"},
                "image_url": {"type": "string"},
                "path": {"type": "string"},
                "name": {"type": "string"}
            },
            "additionalProperties": false
        }
    })
}

fn function(name: &str, description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "name": name,
        "description": description,
        "strict": false,
        "parameters": parameters,
    })
}

/// The five sub-agent tools.
pub(crate) fn collab_tools() -> Vec<Value> {
    vec![
        function(
            "spawn_agent",
            "Start a sub-agent on a self-contained task. It runs in parallel with you, in the \
             same workspace and under the same sandbox and approval policy, and answers with \
             its final message. Returns its `agent_id`; use wait_agent to collect the result.",
            json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The task, stated completely."},
                    "items": input_items_schema(),
                    "agent_type": {"type": "string", "description": "A role name (accepted; every agent gets the same instructions)."},
                    "fork_context": {"type": "boolean", "description": "Start from a copy of this conversation (default false)."},
                    "model": {"type": "string", "description": "Model for the sub-agent; defaults to yours."},
                    "reasoning_effort": {"type": "string", "description": "Reasoning effort for the sub-agent."}
                },
                "additionalProperties": false
            }),
        ),
        function(
            "send_input",
            "Send more input to an open sub-agent. With `interrupt` true its current work is \
             stopped first; otherwise the input joins its current turn or starts a new one.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The agent_id spawn_agent returned."},
                    "message": {"type": "string"},
                    "items": input_items_schema(),
                    "interrupt": {"type": "boolean"}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        ),
        function(
            "wait_agent",
            "Wait until at least one of the given sub-agents has finished its work (or the \
             timeout passes), then return each one's status and final message.",
            json!({
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}, "description": "Agent ids to wait for."},
                    "timeout_ms": {"type": "number", "description": "Longest wait in ms (default 30000, 1000 to 3600000)."}
                },
                "required": ["ids"],
                "additionalProperties": false
            }),
        ),
        function(
            "close_agent",
            "Close a sub-agent you no longer need: its work and commands stop and its slot is \
             freed. Returns the status it had.",
            json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The agent to close."}},
                "required": ["id"],
                "additionalProperties": false
            }),
        ),
        function(
            "resume_agent",
            "Reopen a closed sub-agent with its history; send it input with send_input.",
            json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The agent to reopen."}},
                "required": ["id"],
                "additionalProperties": false
            }),
        ),
    ]
}

/// The definition of one second-generation sub-agent tool (`collaboration` in code mode), by
/// name, with Codex 0.171's parameters.
pub(crate) fn task_tool(name: &str) -> Value {
    let target = |what: &str| json!({"type": "string", "description": format!("The agent {what}: its task name relative to you, its full path (`/root/...`) or its agent_id.")});
    let (description, parameters) = match name {
        "spawn_agent" => (
            "Start a sub-agent on a task. It runs beside you, in the same workspace, under the \
             same sandbox and approvals, with the same tools (it may spawn agents of its own). \
             Its path is your path plus `task_name` (`/root/tests` when you are `/root`); \
             others reach it by that path, and its final answer arrives in your history when \
             it finishes. `fork_turns`: `all` (default) gives it this conversation so far, \
             `none` starts it with only the message.",
            json!({
                "type": "object",
                "properties": {
                    "task_name": {"type": "string", "description": "Task name: lowercase letters, digits and underscores."},
                    "message": {"type": "string", "description": "The task, stated completely."},
                    "fork_turns": {"type": "string", "description": "`all` (default) or `none`."},
                    "model": {"type": "string", "description": "Model for the agent; omit to use yours."},
                    "reasoning_effort": {"type": "string", "description": "Reasoning effort for the agent; omit to use yours."}
                },
                "required": ["task_name", "message"],
                "additionalProperties": false
            }),
        ),
        "send_message" => (
            "Send a message to another agent of your tree (your parent included). It joins the \
             agent's history with its next model request; it does not start a turn.",
            json!({
                "type": "object",
                "properties": {
                    "target": target("to message"),
                    "message": {"type": "string", "description": "The message."}
                },
                "required": ["target", "message"],
                "additionalProperties": false
            }),
        ),
        "followup_task" => (
            "Give a sub-agent another task: it starts a turn on it when idle, or takes it into \
             the turn it is running.",
            json!({
                "type": "object",
                "properties": {
                    "target": target("to give the task to"),
                    "message": {"type": "string", "description": "The task, stated completely."}
                },
                "required": ["target", "message"],
                "additionalProperties": false
            }),
        ),
        "wait_agent" => (
            "Wait until something arrives for you: a message, or an agent's news (a finished \
             task). Returns who sent what kind of update, or that the wait timed out; the \
             content itself is in your history.",
            json!({
                "type": "object",
                "properties": {
                    "timeout_ms": {"type": "number", "description": "Longest wait in ms (default 30000, 10000 to 3600000)."}
                },
                "additionalProperties": false
            }),
        ),
        "interrupt_agent" => (
            "Stop the turn an agent is running, if any; it stays available for messages and \
             tasks. Returns the status it had.",
            json!({
                "type": "object",
                "properties": {"target": target("to interrupt")},
                "required": ["target"],
                "additionalProperties": false
            }),
        ),
        _ => (
            "List the live agents of your tree with their status, optionally only those under \
             a path.",
            json!({
                "type": "object",
                "properties": {
                    "path_prefix": {"type": "string", "description": "A path such as `/root/tests`, without a trailing slash."}
                },
                "additionalProperties": false
            }),
        ),
    };
    function(name, description, parameters)
}
