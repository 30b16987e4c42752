//! What the second generation of sub-agent tools shows a parent's clients: an agent started,
//! was given a message or a task, was interrupted, or finished a turn (Codex 0.171's
//! `subAgentActivity` item), the model's messages to the user that do not hold its turn, and
//! its interruptible sleeps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ReasoningEffort;
use crate::ConversationId;

/// What happened to a sub-agent; the values of Codex's `SubAgentActivityKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SubAgentActivityKind {
    /// `spawn_agent` started it.
    Started,
    /// `send_message` or `followup_task` reached it.
    Interacted,
    /// `interrupt_agent` stopped its turn.
    Interrupted,
    /// It finished a turn; its answer went to its parent.
    Completed,
}

/// Payload of `sub_agent_activity`: one thing that happened to one sub-agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentActivityEvent {
    /// The item id: the tool call's id, or `subagent-completed-<id>` for a finished turn.
    pub id: String,
    /// What happened.
    pub kind: SubAgentActivityKind,
    /// The sub-agent's thread.
    pub agent_thread_id: ConversationId,
    /// Its task path (`/root/worker`).
    pub agent_path: String,
    /// The model it runs, when it was started.
    #[serde(default)]
    pub model: Option<String>,
    /// The effort it runs at, when it was started.
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// One question of `request_user_input_async`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AsyncUserInputQuestion {
    /// The whole question.
    pub title: String,
    /// Suggested answers.
    #[serde(default)]
    pub options: Option<Vec<String>>,
}

/// Payload of `async_agent_message`: a message the model shows the user without ending or
/// holding its turn (`send_message_to_user_async`, `request_user_input_async`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AsyncAgentMessageEvent {
    /// The tool call's id (the item's id).
    pub call_id: String,
    /// The text shown.
    pub message: String,
    /// The questions, for `request_user_input_async`.
    #[serde(default)]
    pub questions: Option<Vec<AsyncUserInputQuestion>>,
}

/// Payload of `sleep_started` / `sleep_ended`: the model's `clock.sleep` call, which new
/// input cuts short (Codex 0.171's `sleep` item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SleepEvent {
    /// The call's id (the item's id).
    pub call_id: String,
    /// How long the model asked to sleep.
    pub duration_ms: u64,
}
