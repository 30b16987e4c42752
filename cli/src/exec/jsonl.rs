//! `keel exec --json`: the app-server notifications of the run, turned into the JSON Lines
//! of `codex exec --json` ([`ExecEvent`]).

use std::collections::HashMap;

use keel_protocol::app_server::{
    CommandExecutionStatus, McpToolCallStatus, PatchApplyStatus, PatchChangeKind,
    ServerNotification, ThreadItem, TurnPlanStepStatus, TurnStatus,
};
use keel_protocol::exec_events::{
    ExecCommandStatus, ExecError, ExecEvent, ExecFileChange, ExecFileChangeKind, ExecItem,
    ExecItemDetails, ExecPatchStatus, ExecTodoItem, ExecToolStatus, ExecUsage,
};

/// Follows one thread's notifications and says which lines they make.
#[derive(Default)]
pub struct JsonlStream {
    /// Stream ids (`item_N`) of the items seen, by app-server item id.
    ids: HashMap<String, String>,
    next_id: u64,
    /// The thread's token usage so far.
    usage: ExecUsage,
    /// The last fatal error's text, for a `turn.failed` that carries none.
    last_error: Option<String>,
    /// The turn's to-do list item, once the plan was first set.
    todo: Option<String>,
    todo_items: Vec<ExecTodoItem>,
}

impl JsonlStream {
    /// The first line: the thread the run works in.
    pub fn thread_started(thread_id: &str) -> ExecEvent {
        ExecEvent::ThreadStarted {
            thread_id: thread_id.to_string(),
        }
    }

    /// A configuration warning, shown as Codex shows one: a completed `error` item.
    pub fn warning(&mut self, message: String) -> ExecEvent {
        ExecEvent::ItemCompleted {
            item: ExecItem {
                id: self.fresh_id(),
                details: ExecItemDetails::Error { message },
            },
        }
    }

    /// The lines `notification` makes (often none).
    pub fn lines(&mut self, notification: &ServerNotification) -> Vec<ExecEvent> {
        match notification {
            ServerNotification::TurnStarted(_) => {
                self.last_error = None;
                self.todo = None;
                self.todo_items.clear();
                vec![ExecEvent::TurnStarted {}]
            }
            ServerNotification::ItemStarted(started) => self
                .item(&started.item, false)
                .map(|item| ExecEvent::ItemStarted { item })
                .into_iter()
                .collect(),
            ServerNotification::ItemCompleted(done) => self
                .item(&done.item, true)
                .map(|item| ExecEvent::ItemCompleted { item })
                .into_iter()
                .collect(),
            ServerNotification::TurnPlanUpdated(plan) => {
                self.todo_items = plan
                    .plan
                    .iter()
                    .map(|step| ExecTodoItem {
                        text: step.step.clone(),
                        completed: step.status == TurnPlanStepStatus::Completed,
                    })
                    .collect();
                let details = ExecItemDetails::TodoList {
                    items: self.todo_items.clone(),
                };
                match &self.todo {
                    Some(id) => vec![ExecEvent::ItemUpdated {
                        item: ExecItem {
                            id: id.clone(),
                            details,
                        },
                    }],
                    None => {
                        let id = self.fresh_id();
                        self.todo = Some(id.clone());
                        vec![ExecEvent::ItemStarted {
                            item: ExecItem { id, details },
                        }]
                    }
                }
            }
            ServerNotification::ThreadTokenUsageUpdated(update) => {
                // As `codex exec`: the thread's running total (earlier turns included, also
                // across resume and fork), not the turn's own.
                let total = &update.token_usage.total;
                self.usage = ExecUsage {
                    input_tokens: total.input_tokens,
                    cached_input_tokens: total.cached_input_tokens,
                    cache_write_input_tokens: 0,
                    output_tokens: total.output_tokens,
                    reasoning_output_tokens: total.reasoning_output_tokens,
                };
                Vec::new()
            }
            ServerNotification::Error(error) => {
                if !error.will_retry {
                    self.last_error = Some(error.error.message.clone());
                }
                vec![ExecEvent::Error {
                    message: error.error.message.clone(),
                }]
            }
            ServerNotification::Warning(warning) => vec![self.warning(warning.message.clone())],
            ServerNotification::TurnCompleted(done) => {
                let mut lines = self.close_todo();
                lines.push(match done.turn.status {
                    TurnStatus::Failed => ExecEvent::TurnFailed {
                        error: ExecError {
                            message: done
                                .turn
                                .error
                                .as_ref()
                                .map(|error| error.message.clone())
                                .or_else(|| self.last_error.clone())
                                .unwrap_or_else(|| "the turn failed".to_string()),
                        },
                    },
                    TurnStatus::Interrupted => ExecEvent::TurnFailed {
                        error: ExecError {
                            message: "the turn was interrupted".to_string(),
                        },
                    },
                    TurnStatus::Completed | TurnStatus::InProgress => {
                        ExecEvent::TurnCompleted { usage: self.usage }
                    }
                });
                lines
            }
            _ => Vec::new(),
        }
    }

    /// The to-do list ends with its turn.
    fn close_todo(&mut self) -> Vec<ExecEvent> {
        match self.todo.take() {
            Some(id) => vec![ExecEvent::ItemCompleted {
                item: ExecItem {
                    id,
                    details: ExecItemDetails::TodoList {
                        items: std::mem::take(&mut self.todo_items),
                    },
                },
            }],
            None => Vec::new(),
        }
    }

    fn fresh_id(&mut self) -> String {
        let id = format!("item_{}", self.next_id);
        self.next_id += 1;
        id
    }

    /// The stream id of an app-server item, given on first sight.
    fn id_for(&mut self, item_id: &str, completed: bool) -> String {
        let id = match self.ids.get(item_id) {
            Some(id) => id.clone(),
            None => {
                let id = self.fresh_id();
                self.ids.insert(item_id.to_string(), id.clone());
                id
            }
        };
        if completed {
            self.ids.remove(item_id);
        }
        id
    }

    /// The stream's view of an item; `None` for items the stream does not show (the
    /// user's message, compaction, sub-agent calls) or does not show yet (text while it
    /// streams).
    fn item(&mut self, item: &ThreadItem, completed: bool) -> Option<ExecItem> {
        let (item_id, details) = match item {
            ThreadItem::AgentMessage { id, text, .. } if completed => {
                (id, ExecItemDetails::AgentMessage { text: text.clone() })
            }
            ThreadItem::Reasoning { id, summary, .. } if completed => {
                let text = summary.join("\n");
                if text.is_empty() {
                    return None;
                }
                (id, ExecItemDetails::Reasoning { text })
            }
            ThreadItem::CommandExecution {
                id,
                command,
                status,
                aggregated_output,
                exit_code,
                ..
            } => (
                id,
                ExecItemDetails::CommandExecution {
                    command: command.clone(),
                    aggregated_output: aggregated_output.clone().unwrap_or_default(),
                    exit_code: *exit_code,
                    status: match status {
                        CommandExecutionStatus::InProgress => ExecCommandStatus::InProgress,
                        CommandExecutionStatus::Completed => ExecCommandStatus::Completed,
                        CommandExecutionStatus::Failed => ExecCommandStatus::Failed,
                        CommandExecutionStatus::Declined => ExecCommandStatus::Declined,
                    },
                },
            ),
            ThreadItem::FileChange {
                id,
                changes,
                status,
            } => (
                id,
                ExecItemDetails::FileChange {
                    changes: changes
                        .iter()
                        .map(|change| ExecFileChange {
                            path: change.path.clone(),
                            kind: match change.kind {
                                PatchChangeKind::Add => ExecFileChangeKind::Add,
                                PatchChangeKind::Delete => ExecFileChangeKind::Delete,
                                PatchChangeKind::Update { .. } => ExecFileChangeKind::Update,
                            },
                        })
                        .collect(),
                    status: match status {
                        PatchApplyStatus::InProgress => ExecPatchStatus::InProgress,
                        PatchApplyStatus::Completed => ExecPatchStatus::Completed,
                        PatchApplyStatus::Failed | PatchApplyStatus::Declined => {
                            ExecPatchStatus::Failed
                        }
                    },
                },
            ),
            ThreadItem::McpToolCall(call) => (
                &call.id,
                ExecItemDetails::McpToolCall {
                    server: call.server.clone(),
                    tool: call.tool.clone(),
                    arguments: call.arguments.clone(),
                    result: call
                        .result
                        .as_ref()
                        .and_then(|result| serde_json::to_value(result).ok()),
                    error: call.error.as_ref().map(|error| ExecError {
                        message: error.message.clone(),
                    }),
                    status: match call.status {
                        McpToolCallStatus::InProgress => ExecToolStatus::InProgress,
                        McpToolCallStatus::Completed => ExecToolStatus::Completed,
                        McpToolCallStatus::Failed => ExecToolStatus::Failed,
                    },
                },
            ),
            _ => return None,
        };
        Some(ExecItem {
            id: self.id_for(item_id, completed),
            details,
        })
    }
}
