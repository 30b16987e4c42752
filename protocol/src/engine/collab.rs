//! Sub-agents as their parent sees them: where each stands, and the parent's calls to the
//! tools that spawn, message, wait for and close them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ReasoningEffort;
use crate::ConversationId;

/// Where a sub-agent stands; the values of Codex's `CollabAgentStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CollabAgentStatus {
    /// Spawned; its first turn has not started yet.
    PendingInit,
    /// A turn is running.
    Running,
    /// Its last turn was interrupted.
    Interrupted,
    /// Its last turn completed.
    Completed,
    /// Its last turn failed.
    Errored,
    /// It was closed (or its conversation ended).
    Shutdown,
    /// No agent has this id.
    NotFound,
}

impl CollabAgentStatus {
    /// Whether the agent is done with its input for now (a waiter stops waiting for it).
    pub fn is_final(self) -> bool {
        !matches!(self, Self::PendingInit | Self::Running)
    }
}

/// A sub-agent's status with its last message (the answer or the error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollabAgentState {
    /// Where it stands.
    pub status: CollabAgentStatus,
    /// Its last turn's final message, or the error that ended it.
    #[serde(default)]
    pub message: Option<String>,
}

impl CollabAgentState {
    /// A state without a message.
    pub fn new(status: CollabAgentStatus) -> Self {
        Self {
            status,
            message: None,
        }
    }
}

/// Which sub-agent tool a call used; the values of Codex's `CollabAgentTool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CollabAgentTool {
    /// `spawn_agent`.
    SpawnAgent,
    /// `send_input`.
    SendInput,
    /// `resume_agent`.
    ResumeAgent,
    /// `wait_agent`.
    Wait,
    /// `close_agent`.
    CloseAgent,
    /// `send_message` (second generation): a message for an agent, no new turn.
    SendMessage,
    /// `followup_task` (second generation): a task for an agent, run as its next turn.
    FollowupTask,
    /// `interrupt_agent` (second generation).
    InterruptAgent,
    /// `list_agents` (second generation).
    ListAgents,
}

/// Progress of a sub-agent tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CollabAgentToolCallStatus {
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Refused or failed (the model got the error).
    Failed,
}

/// Payload of `collab_tool_call_begin` / `collab_tool_call_end`: one sub-agent tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollabToolCallEvent {
    /// The model's call id.
    pub call_id: String,
    /// The tool.
    pub tool: CollabAgentTool,
    /// The conversation that made the call.
    pub sender_thread_id: ConversationId,
    /// The sub-agents it addressed (known once spawned).
    pub receiver_thread_ids: Vec<ConversationId>,
    /// The message sent, for `spawn_agent` and `send_input`.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The model a spawned agent runs.
    #[serde(default)]
    pub model: Option<String>,
    /// The reasoning effort a spawned agent runs with.
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Each addressed agent's state when the event was sent, keyed by its id.
    pub agents_states: BTreeMap<String, CollabAgentState>,
    /// The call's progress.
    pub status: CollabAgentToolCallStatus,
}

/// Payload of `agent_job_progress`: how far a `spawn_agents_on_csv` job has come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentJobProgressEvent {
    /// The job.
    pub job_id: String,
    /// Rows in the job.
    pub total: u64,
    /// Rows that completed (reported a result).
    pub completed: u64,
    /// Rows that failed.
    pub failed: u64,
    /// Rows with a worker running now.
    pub running: u64,
}
