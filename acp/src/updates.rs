//! The app-server's notifications as `session/update`s: streamed text and reasoning, the
//! model's commands, patches and tool calls as ACP tool calls, and the plan.

use keel_protocol::acp::{
    ContentBlock, ContentChunk, Notice, Plan, PlanEntry, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use keel_protocol::app_server::{
    CommandAction, CommandExecutionStatus, FileUpdateChange, McpServerStartupState,
    McpToolCallStatus, PatchApplyStatus, PatchChangeKind, ServerNotification, ThreadItem,
    ThreadTokenUsage, TurnPlanStep, TurnPlanStepStatus,
};
use serde_json::json;

use crate::sessions::Sessions;

/// The updates `notification` makes, each with its session.
pub(crate) fn updates(
    notification: &ServerNotification,
    sessions: &Sessions,
) -> Vec<(String, SessionUpdate)> {
    use ServerNotification as N;
    let one = |thread: &str, update| vec![(thread.to_string(), update)];
    match notification {
        N::AgentMessageDelta(delta) => {
            sessions.with(&delta.thread_id, |session| {
                session.streamed.insert(delta.item_id.clone())
            });
            one(
                &delta.thread_id,
                SessionUpdate::AgentMessageChunk(text(&delta.delta)),
            )
        }
        N::ReasoningSummaryTextDelta(delta) => one(
            &delta.thread_id,
            SessionUpdate::AgentThoughtChunk(text(&delta.delta)),
        ),
        N::ItemStarted(started) => {
            if let ThreadItem::FileChange { id, changes, .. } = &started.item {
                sessions.with(&started.thread_id, |session| {
                    session.changes.insert(id.clone(), changes.clone())
                });
            }
            started_call(&started.item)
                .map(|call| one(&started.thread_id, SessionUpdate::ToolCall(call)))
                .unwrap_or_default()
        }
        N::ItemCompleted(completed) => {
            if let ThreadItem::AgentMessage {
                id, text: whole, ..
            } = &completed.item
            {
                let streamed = sessions
                    .with(&completed.thread_id, |session| session.streamed.remove(id))
                    .unwrap_or(false);
                return if streamed || whole.is_empty() {
                    Vec::new()
                } else {
                    one(
                        &completed.thread_id,
                        SessionUpdate::AgentMessageChunk(text(whole)),
                    )
                };
            }
            finished_call(&completed.item)
                .map(|update| one(&completed.thread_id, SessionUpdate::ToolCallUpdate(update)))
                .unwrap_or_default()
        }
        N::ThreadNameUpdated(named) => one(
            &named.thread_id,
            SessionUpdate::SessionInfoUpdate {
                title: named.thread_name.clone(),
            },
        ),
        N::ThreadTokenUsageUpdated(usage) => usage_update(&usage.token_usage)
            .map(|update| one(&usage.thread_id, update))
            .unwrap_or_default(),
        N::TurnPlanUpdated(plan) => one(&plan.thread_id, plan_update(&plan.plan)),
        // Notices (the agent sends them only to an editor that shows notices): a warning
        // about a thread, an MCP server that failed to start, an error the engine retries.
        N::Warning(warning) => warning
            .thread_id
            .as_deref()
            .map(|thread| one(thread, notice(&warning.message, None)))
            .unwrap_or_default(),
        N::McpServerStatusUpdated(status) => match (&status.status, &status.thread_id) {
            (McpServerStartupState::Failed, Some(thread)) => one(
                thread,
                notice(
                    &format!("MCP server `{}` failed to start", status.name),
                    status.error.clone(),
                ),
            ),
            _ => Vec::new(),
        },
        N::Error(failed) if failed.will_retry => one(
            &failed.thread_id,
            notice(&format!("retrying: {}", failed.error.message), None),
        ),
        // Nothing an editor shows as part of the conversation (turn boundaries are handled by
        // the agent; a failed turn ends its prompt with an error).
        N::Error(_)
        | N::ThreadStarted(_)
        | N::ThreadStatusChanged(_)
        | N::ThreadArchived(_)
        | N::ThreadUnarchived(_)
        | N::ThreadDeleted(_)
        | N::ThreadGoalUpdated(_)
        | N::ConfigWarning(_)
        | N::ThreadReverted(_)
        | N::ThreadGoalCleared(_)
        | N::FuzzyFileSearchSessionUpdated(_)
        | N::FuzzyFileSearchSessionCompleted(_)
        | N::FsChanged(_)
        | N::ThreadReadStateChanged(_)
        | N::ThreadClosed(_)
        | N::ThreadCompacted(_)
        | N::ThreadQueueChanged(_)
        | N::TurnStarted(_)
        | N::TurnCompleted(_)
        | N::TurnDiffUpdated(_)
        | N::CommandExecutionOutputDelta(_)
        | N::TerminalInteraction(_)
        | N::ReasoningSummaryPartAdded(_)
        | N::ServerRequestResolved(_)
        | N::CommandExecOutputDelta(_)
        | N::AccountRateLimitsUpdated(_)
        | N::SkillsChanged(_)
        | N::HookStarted(_)
        | N::HookCompleted(_)
        | N::McpToolCallProgress(_)
        | N::McpServerOauthLoginCompleted(_)
        | N::ThreadSettingsUpdated(_)
        | N::ThreadEnvironmentConnected(_)
        | N::ThreadAttachmentUpdated(_)
        | N::ThreadSectionChanged(_)
        | N::AccountLoginCompleted(_)
        | N::AccountUpdated(_)
        | N::WindowsSandboxSetupCompleted(_)
        | N::ExternalAgentConfigImportProgress(_)
        | N::ExternalAgentConfigImportCompleted(_)
        | N::ThreadEnvironmentDisconnected(_) => Vec::new(),
    }
}

fn notice(title: &str, description: Option<String>) -> SessionUpdate {
    SessionUpdate::Notice(Notice {
        severity: "warning".to_string(),
        title: title.to_string(),
        description,
    })
}

fn text(text: &str) -> ContentChunk {
    ContentChunk {
        content: ContentBlock::text(text),
    }
}

/// What a command does, from the actions Keel parsed out of it.
fn command_kind(actions: &[CommandAction]) -> ToolKind {
    let kinds: Vec<ToolKind> = actions
        .iter()
        .map(|action| match action {
            CommandAction::Read { .. } | CommandAction::ListFiles { .. } => ToolKind::Read,
            CommandAction::Search { .. } => ToolKind::Search,
            CommandAction::Unknown { .. } => ToolKind::Execute,
        })
        .collect();
    match kinds.first() {
        Some(first) if kinds.iter().all(|kind| kind == first) => *first,
        _ => ToolKind::Execute,
    }
}

/// The files a patch touches, and what it does to them.
pub(crate) fn patch_call_parts(
    changes: &[FileUpdateChange],
) -> (String, Vec<ToolCallContent>, Vec<ToolCallLocation>) {
    let names: Vec<String> = changes
        .iter()
        .map(|change| change.path.display().to_string())
        .collect();
    let title = format!("Edit {}", names.join(", "));
    let content = changes
        .iter()
        .map(|change| match &change.kind {
            PatchChangeKind::Add => ToolCallContent::Diff {
                path: change.path.display().to_string(),
                old_text: None,
                new_text: change.diff.clone(),
            },
            PatchChangeKind::Delete | PatchChangeKind::Update { .. } => ToolCallContent::Content {
                content: ContentBlock::text(format!(
                    "```diff\n--- {path}\n+++ {path}\n{}\n```",
                    change.diff.trim_end(),
                    path = change.path.display()
                )),
            },
        })
        .collect();
    let locations = names
        .into_iter()
        .map(|path| ToolCallLocation { path, line: None })
        .collect();
    (title, content, locations)
}

/// The tool call an item starts, if it is one.
fn started_call(item: &ThreadItem) -> Option<ToolCall> {
    Some(match item {
        ThreadItem::CommandExecution {
            id,
            command,
            cwd,
            command_actions,
            ..
        } => ToolCall {
            tool_call_id: id.clone(),
            title: command.clone(),
            kind: command_kind(command_actions),
            status: ToolCallStatus::InProgress,
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: Some(json!({"command": command, "cwd": cwd})),
        },
        ThreadItem::FileChange { id, changes, .. } => {
            let (title, content, locations) = patch_call_parts(changes);
            ToolCall {
                tool_call_id: id.clone(),
                title,
                kind: ToolKind::Edit,
                status: ToolCallStatus::InProgress,
                content,
                locations,
                raw_input: None,
            }
        }
        ThreadItem::McpToolCall(call) => ToolCall {
            tool_call_id: call.id.clone(),
            title: format!("{}: {}", call.server, call.tool),
            kind: ToolKind::Other,
            status: ToolCallStatus::InProgress,
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: Some(call.arguments.clone()),
        },
        // Not tool calls an editor shows.
        ThreadItem::UserMessage { .. }
        | ThreadItem::AgentMessage { .. }
        | ThreadItem::Plan { .. }
        | ThreadItem::Reasoning { .. }
        | ThreadItem::ContextCompaction { .. }
        | ThreadItem::EnteredReviewMode { .. }
        | ThreadItem::ExitedReviewMode { .. }
        | ThreadItem::CollabAgentToolCall(_)
        | ThreadItem::SubAgentActivity(_)
        | ThreadItem::Sleep { .. }
        | ThreadItem::DynamicToolCall(_) => return None,
    })
}

/// The last update of a finished tool call, if the item is one.
fn finished_call(item: &ThreadItem) -> Option<ToolCallUpdate> {
    Some(match item {
        ThreadItem::CommandExecution {
            id,
            status,
            aggregated_output,
            exit_code,
            ..
        } => {
            let output = aggregated_output.clone().unwrap_or_default();
            ToolCallUpdate {
                tool_call_id: id.clone(),
                status: Some(match status {
                    CommandExecutionStatus::Completed => ToolCallStatus::Completed,
                    CommandExecutionStatus::InProgress => ToolCallStatus::InProgress,
                    CommandExecutionStatus::Failed | CommandExecutionStatus::Declined => {
                        ToolCallStatus::Failed
                    }
                }),
                content: (!output.is_empty()).then(|| {
                    vec![ToolCallContent::Content {
                        content: ContentBlock::text(format!("```\n{}\n```", output.trim_end())),
                    }]
                }),
                raw_output: Some(json!({"exitCode": exit_code, "output": output})),
                ..ToolCallUpdate::default()
            }
        }
        ThreadItem::FileChange { id, status, .. } => ToolCallUpdate {
            tool_call_id: id.clone(),
            status: Some(match status {
                PatchApplyStatus::Completed => ToolCallStatus::Completed,
                PatchApplyStatus::InProgress => ToolCallStatus::InProgress,
                PatchApplyStatus::Failed | PatchApplyStatus::Declined => ToolCallStatus::Failed,
            }),
            ..ToolCallUpdate::default()
        },
        ThreadItem::McpToolCall(call) => ToolCallUpdate {
            tool_call_id: call.id.clone(),
            status: Some(match call.status {
                McpToolCallStatus::Completed => ToolCallStatus::Completed,
                McpToolCallStatus::InProgress => ToolCallStatus::InProgress,
                McpToolCallStatus::Failed => ToolCallStatus::Failed,
            }),
            raw_output: call
                .result
                .as_ref()
                .and_then(|result| serde_json::to_value(result).ok()),
            ..ToolCallUpdate::default()
        },
        // Not tool calls an editor shows.
        ThreadItem::UserMessage { .. }
        | ThreadItem::AgentMessage { .. }
        | ThreadItem::Plan { .. }
        | ThreadItem::Reasoning { .. }
        | ThreadItem::ContextCompaction { .. }
        | ThreadItem::EnteredReviewMode { .. }
        | ThreadItem::ExitedReviewMode { .. }
        | ThreadItem::CollabAgentToolCall(_)
        | ThreadItem::SubAgentActivity(_)
        | ThreadItem::Sleep { .. }
        | ThreadItem::DynamicToolCall(_) => return None,
    })
}

/// A finished item as one tool call in its final state (for a replay).
pub(crate) fn ended_call(item: &ThreadItem) -> Option<ToolCall> {
    let mut call = started_call(item)?;
    if let Some(end) = finished_call(item) {
        if let Some(status) = end.status {
            call.status = status;
        }
        if let Some(content) = end.content {
            call.content.extend(content);
        }
    }
    Some(call)
}

/// The context window in use, once the model's window is known (ACP needs its size).
pub(crate) fn usage_update(usage: &ThreadTokenUsage) -> Option<SessionUpdate> {
    usage
        .model_context_window
        .map(|size| SessionUpdate::UsageUpdate {
            used: usage.last.total_tokens,
            size,
        })
}

/// The whole plan, as ACP shows it (every step at one priority: Keel's plans have none).
pub(crate) fn plan_update(steps: &[TurnPlanStep]) -> SessionUpdate {
    SessionUpdate::Plan(Plan {
        entries: steps
            .iter()
            .map(|step| PlanEntry {
                content: step.step.clone(),
                priority: "medium".to_string(),
                status: match step.status {
                    TurnPlanStepStatus::Pending => "pending",
                    TurnPlanStepStatus::InProgress => "in_progress",
                    TurnPlanStepStatus::Completed => "completed",
                }
                .to_string(),
            })
            .collect(),
    })
}
