//! Building thread items from engine values.

use keel_protocol::app_server::{
    CommandAction, CommandExecutionSource, CommandExecutionStatus, ThreadItem,
};

/// A command item in progress, as an approval request or `exec_command_begin` starts it.
pub(crate) fn command_item(
    call_id: &str,
    command: &[String],
    cwd: &std::path::Path,
    parsed: &[keel_protocol::ParsedCommand],
    process_id: Option<String>,
    source: keel_protocol::ExecCommandSource,
) -> ThreadItem {
    ThreadItem::CommandExecution {
        id: call_id.to_string(),
        command: display_command(command),
        cwd: cwd.to_path_buf(),
        source: source_of(source, process_id.as_deref()),
        process_id,
        status: CommandExecutionStatus::InProgress,
        command_actions: parsed.iter().cloned().map(CommandAction::from).collect(),
        aggregated_output: None,
        exit_code: None,
        duration_ms: None,
    }
}

/// The user's own command, an `exec_command` session (it has a process id), or a one-shot
/// command of the model.
pub(crate) fn source_of(
    source: keel_protocol::ExecCommandSource,
    process_id: Option<&str>,
) -> CommandExecutionSource {
    if source == keel_protocol::ExecCommandSource::UserShell {
        CommandExecutionSource::UserShell
    } else if process_id.is_some() {
        CommandExecutionSource::UnifiedExecStartup
    } else {
        CommandExecutionSource::Agent
    }
}

/// A command line as a shell would show it (words quoted only when needed).
pub(crate) fn display_command(argv: &[String]) -> String {
    argv.iter()
        .map(|word| {
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
            {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The thread item of a sub-agent tool call.
pub(crate) fn collab_item(call: &keel_protocol::CollabToolCallEvent) -> ThreadItem {
    use keel_protocol::app_server::CollabAgentToolCallItem;
    ThreadItem::CollabAgentToolCall(Box::new(CollabAgentToolCallItem {
        id: call.call_id.clone(),
        tool: call.tool,
        status: call.status,
        sender_thread_id: call.sender_thread_id.to_string(),
        receiver_thread_ids: call
            .receiver_thread_ids
            .iter()
            .map(ToString::to_string)
            .collect(),
        prompt: call.prompt.clone(),
        model: call.model.clone(),
        reasoning_effort: call.reasoning_effort.clone(),
        agents_states: call.agents_states.clone(),
    }))
}

/// The `mcpToolCall` item of a call that started.
pub(crate) fn mcp_item_started(begin: &keel_protocol::McpToolCallBeginEvent) -> ThreadItem {
    use keel_protocol::app_server::{McpToolCallItem, McpToolCallStatus};
    ThreadItem::McpToolCall(Box::new(McpToolCallItem {
        id: begin.call_id.to_string(),
        server: begin.invocation.server.clone(),
        tool: begin.invocation.tool.clone(),
        status: McpToolCallStatus::InProgress,
        arguments: begin
            .invocation
            .arguments
            .clone()
            .unwrap_or(serde_json::Value::Null),
        result: None,
        error: None,
        duration_ms: None,
        environment_id: Some(keel_core::config::LOCAL_ENVIRONMENT.to_string()),
    }))
}

/// The `mcpToolCall` item of a call that ended: completed with the server's answer, or
/// failed with why there is none.
pub(crate) fn mcp_item_ended(end: &keel_protocol::McpToolCallEndEvent) -> ThreadItem {
    use keel_protocol::app_server::{
        McpToolCallError, McpToolCallItem, McpToolCallResult, McpToolCallStatus,
    };
    let (status, result, error) = match &end.result {
        Ok(result) => (
            McpToolCallStatus::Completed,
            Some(McpToolCallResult {
                content: result.content.clone(),
                structured_content: result.structured_content.clone(),
            }),
            None,
        ),
        Err(message) => (
            McpToolCallStatus::Failed,
            None,
            Some(McpToolCallError {
                message: message.clone(),
            }),
        ),
    };
    ThreadItem::McpToolCall(Box::new(McpToolCallItem {
        id: end.call_id.to_string(),
        server: end.invocation.server.clone(),
        tool: end.invocation.tool.clone(),
        status,
        arguments: end
            .invocation
            .arguments
            .clone()
            .unwrap_or(serde_json::Value::Null),
        result,
        error,
        duration_ms: Some(i64::try_from(end.duration.as_millis()).unwrap_or(i64::MAX)),
        environment_id: Some(keel_core::config::LOCAL_ENVIRONMENT.to_string()),
    }))
}
