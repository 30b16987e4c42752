//! v1 → v2 for what the agent sends: the translation from the app-server's events stays v1's
//! (one translation layer), and this turns each of its messages into the draft's shapes,
//! keeping the ids v2 adds (one per message, one plan per session).

use std::collections::HashMap;
use std::sync::Mutex;

use keel_protocol::acp::{self as v1, v2};

/// The kind of message a chunk belongs to (ids are per kind in v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MessageKind {
    User,
    Agent,
    Thought,
}

/// What v2 needs remembered per session: the message the chunks are adding to.
#[derive(Default)]
struct SessionIds {
    /// The open message of each kind; a message ends when anything else is shown.
    open: HashMap<MessageKind, String>,
}

/// Turns v1 messages into v2 ones for one connection.
#[derive(Default)]
pub(crate) struct Converter {
    sessions: Mutex<HashMap<String, SessionIds>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Converter {
    /// A new id for a message of this connection.
    pub(crate) fn new_message_id(&self) -> String {
        let n = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("msg-{n}")
    }

    /// The v2 updates one v1 update becomes (none for what v2 has no place for).
    pub(crate) fn update(
        &self,
        session_id: &str,
        update: v1::SessionUpdate,
    ) -> Vec<v2::SessionUpdate> {
        use v1::SessionUpdate as U;
        let chunk = |kind: MessageKind, chunk: v1::ContentChunk| v2::ContentChunk {
            message_id: self.message_id(session_id, kind),
            content: chunk.content,
        };
        let converted = match update {
            U::UserMessageChunk(part) => {
                return vec![v2::SessionUpdate::UserMessageChunk(chunk(
                    MessageKind::User,
                    part,
                ))];
            }
            U::AgentMessageChunk(part) => {
                return vec![v2::SessionUpdate::AgentMessageChunk(chunk(
                    MessageKind::Agent,
                    part,
                ))];
            }
            U::AgentThoughtChunk(part) => {
                return vec![v2::SessionUpdate::AgentThoughtChunk(chunk(
                    MessageKind::Thought,
                    part,
                ))];
            }
            U::ToolCall(call) => Some(v2::SessionUpdate::ToolCallUpdate(tool_call(call))),
            U::ToolCallUpdate(changed) => {
                Some(v2::SessionUpdate::ToolCallUpdate(tool_call_update(changed)))
            }
            U::Plan(plan) => Some(v2::SessionUpdate::PlanUpdate {
                plan: v2::PlanContent::Items {
                    plan_id: format!("plan-{session_id}"),
                    entries: plan.entries,
                },
            }),
            U::SessionInfoUpdate { title } => Some(v2::SessionUpdate::SessionInfoUpdate { title }),
            U::AvailableCommandsUpdate { available_commands } => {
                Some(v2::SessionUpdate::AvailableCommandsUpdate {
                    available_commands: commands(available_commands),
                })
            }
            U::UsageUpdate { used, size } => Some(v2::SessionUpdate::UsageUpdate { used, size }),
            U::ConfigOptionUpdate { config_options } => {
                Some(v2::SessionUpdate::ConfigOptionUpdate {
                    config_options: config_options.into_iter().map(config_option).collect(),
                })
            }
            // The mode is one of the pickers in v2 (its `config_option_update` follows); v2's
            // editors have no notices or sub-agents capability Keel could have been offered.
            U::CurrentModeUpdate { .. } | U::Notice(_) | U::SubagentUpdate(_) => None,
        };
        // Anything shown between chunks ends the messages they were adding to.
        self.close_messages(session_id);
        converted.into_iter().collect()
    }

    /// A state change ends the open messages too.
    pub(crate) fn state(&self, session_id: &str, state: v2::StateUpdate) -> v2::SessionUpdate {
        self.close_messages(session_id);
        v2::SessionUpdate::StateUpdate(state)
    }

    fn message_id(&self, session_id: &str, kind: MessageKind) -> String {
        let mut sessions = lock(&self.sessions);
        let ids = sessions.entry(session_id.to_string()).or_default();
        // A message of one kind ends the other kinds' open messages.
        ids.open.retain(|open, _| *open == kind);
        if let Some(id) = ids.open.get(&kind) {
            return id.clone();
        }
        let id = self.new_message_id();
        ids.open.insert(kind, id.clone());
        id
    }

    fn close_messages(&self, session_id: &str) {
        if let Some(ids) = lock(&self.sessions).get_mut(session_id) {
            ids.open.clear();
        }
    }
}

/// A v1 announcement as a v2 upsert.
fn tool_call(call: v1::ToolCall) -> v2::ToolCallUpdate {
    v2::ToolCallUpdate {
        tool_call_id: call.tool_call_id,
        title: Some(call.title),
        kind: Some(call.kind),
        status: Some(call.status),
        content: Some(contents(call.content)),
        locations: Some(call.locations),
        raw_input: call.raw_input,
        raw_output: None,
    }
}

/// A v1 change as a v2 upsert.
pub(crate) fn tool_call_update(update: v1::ToolCallUpdate) -> v2::ToolCallUpdate {
    v2::ToolCallUpdate {
        tool_call_id: update.tool_call_id,
        title: update.title,
        kind: update.kind,
        status: update.status,
        content: update.content.map(contents),
        locations: update.locations,
        raw_input: update.raw_input,
        raw_output: update.raw_output,
    }
}

/// v1 content as v2's: the files' diffs become one diff with its changes and a git patch; a
/// terminal (never offered in v2) is left out.
fn contents(content: Vec<v1::ToolCallContent>) -> Vec<v2::ToolCallContent> {
    let mut out = Vec::new();
    let mut changes = Vec::new();
    let mut patch = String::new();
    for item in content {
        match item {
            v1::ToolCallContent::Content { content } => {
                out.push(v2::ToolCallContent::Content { content });
            }
            v1::ToolCallContent::Diff {
                path,
                old_text,
                new_text,
            } => {
                let old = old_text.as_deref().unwrap_or_default();
                let relative = path.trim_start_matches('/');
                let from = if old_text.is_some() {
                    format!("a/{relative}")
                } else {
                    "/dev/null".to_string()
                };
                patch.push_str(&format!("diff --git a/{relative} b/{relative}\n"));
                patch.push_str(
                    &similar::TextDiff::from_lines(old, &new_text)
                        .unified_diff()
                        .header(&from, &format!("b/{relative}"))
                        .to_string(),
                );
                changes.push(match old_text {
                    Some(_) => v2::DiffChange::Modify { path },
                    None => v2::DiffChange::Add { path },
                });
            }
            v1::ToolCallContent::Terminal { .. } => {}
        }
    }
    if !changes.is_empty() {
        out.push(v2::ToolCallContent::Diff {
            changes,
            patch: Some(v2::DiffPatch {
                format: "git_patch".to_string(),
                text: patch,
            }),
        });
    }
    out
}

/// v1 commands as v2's.
pub(crate) fn commands(commands: Vec<v1::AvailableCommand>) -> Vec<v2::AvailableCommand> {
    commands
        .into_iter()
        .map(|command| v2::AvailableCommand::Command {
            name: command.name,
            description: command.description,
            input: command
                .input
                .map(|input| v2::CommandInput::Text { hint: input.hint }),
        })
        .collect()
}

/// A v1 picker as v2's.
pub(crate) fn config_option(option: v1::SessionConfigOption) -> v2::SessionConfigOption {
    v2::SessionConfigOption {
        config_id: option.id,
        name: option.name,
        category: option.category,
        kind: option.kind,
        current_value: option.current_value,
        options: option
            .options
            .into_iter()
            .map(|choice| v2::SessionConfigSelectOption {
                value: choice.value,
                name: choice.name,
            })
            .collect(),
    }
}

/// A v1 permission request as v2's: the call's title is the question's.
pub(crate) fn permission(request: v1::RequestPermissionRequest) -> v2::RequestPermissionRequest {
    let title = request
        .tool_call
        .title
        .clone()
        .unwrap_or_else(|| "Allow this tool call?".to_string());
    v2::RequestPermissionRequest {
        session_id: request.session_id,
        title,
        subject: v2::PermissionSubject::ToolCall {
            tool_call: tool_call_update(request.tool_call),
        },
        options: request.options,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
