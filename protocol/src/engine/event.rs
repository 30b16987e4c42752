//! The event side of the engine queue: everything a conversation reports.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    AgentJobProgressEvent, ApplyPatchApprovalRequestEvent, AskForApproval, CollabToolCallEvent,
    ExecApprovalRequestEvent, ExecCommandBeginEvent, ExecCommandEndEvent,
    ExecCommandOutputDeltaEvent, PatchApplyBeginEvent, PatchApplyEndEvent, ReasoningEffort,
    SandboxPolicy, TerminalInteractionEvent, TokenUsageInfo, UpdatePlanArgs,
};
use crate::{ConversationId, SubmissionId, TurnId};

/// One event from a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// The submission that caused it (empty for `session_configured`).
    pub id: SubmissionId,
    /// What happened.
    pub msg: EventMsg,
}

/// What happened, tagged by `type` in snake_case as Codex clients expect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventMsg {
    /// The conversation is ready; always the first event.
    SessionConfigured(SessionConfiguredEvent),
    /// A turn began.
    TaskStarted(TaskStartedEvent),
    /// A turn ended normally.
    TaskComplete(TaskCompleteEvent),
    /// The user's input as recorded for the turn.
    UserMessage(UserMessageEvent),
    /// A complete assistant message.
    AgentMessage(AgentMessageEvent),
    /// A piece of an assistant message as it streams.
    AgentMessageDelta(AgentMessageDeltaEvent),
    /// A complete reasoning summary.
    AgentReasoning(AgentReasoningEvent),
    /// A piece of a reasoning summary as it streams.
    AgentReasoningDelta(AgentReasoningDeltaEvent),
    /// A new part of the reasoning summary starts.
    AgentReasoningSectionBreak(AgentReasoningSectionBreakEvent),
    /// A command is about to run.
    ExecCommandBegin(ExecCommandBeginEvent),
    /// A chunk of a running command's output.
    ExecCommandOutputDelta(ExecCommandOutputDeltaEvent),
    /// A command finished.
    ExecCommandEnd(ExecCommandEndEvent),
    /// The model wrote to a running process's terminal.
    TerminalInteraction(TerminalInteractionEvent),
    /// The engine needs the user's approval to run a command.
    ExecApprovalRequest(ExecApprovalRequestEvent),
    /// The engine needs the user's approval to apply a patch.
    ApplyPatchApprovalRequest(ApplyPatchApprovalRequestEvent),
    /// A patch is about to be applied.
    PatchApplyBegin(PatchApplyBeginEvent),
    /// A patch was applied, or failed.
    PatchApplyEnd(PatchApplyEndEvent),
    /// The agent's plan changed.
    PlanUpdate(UpdatePlanArgs),
    /// The files changed so far in this turn, as one unified diff.
    TurnDiff(TurnDiffEvent),
    /// Token usage after a model response.
    TokenCount(TokenCountEvent),
    /// The turn failed; the conversation remains usable.
    Error(ErrorEvent),
    /// Something the user should know that did not stop the turn.
    Warning(WarningEvent),
    /// The installed skills changed since the conversation last looked.
    SkillsChanged(SkillsChangedEvent),
    /// A hook started running.
    HookStarted(HookRunEvent),
    /// A hook finished.
    HookCompleted(HookRunEvent),
    /// Progress worth showing, such as a retry.
    BackgroundEvent(BackgroundEventEvent),
    /// The model stream failed and is being retried.
    StreamError(StreamErrorEvent),
    /// The turn was stopped before it completed.
    TurnAborted(TurnAbortedEvent),
    /// The latest turns were dropped from history.
    ThreadRolledBack(ThreadRolledBackEvent),
    /// The history is being summarised to fit the model's context window.
    ContextCompactionStarted(ContextCompactionEvent),
    /// The history was replaced by its summary.
    ContextCompacted(ContextCompactionEvent),
    /// The provider's rate limits, from its latest response's headers.
    RateLimits(crate::RateLimitSnapshot),
    /// The model asks the user questions and waits for the answers.
    RequestUserInput(crate::RequestUserInputEvent),
    /// A sub-agent tool call started.
    CollabToolCallBegin(CollabToolCallEvent),
    /// A sub-agent tool call ended.
    CollabToolCallEnd(CollabToolCallEvent),
    /// A sub-agent of the second generation started, was reached, interrupted or finished.
    SubAgentActivity(crate::SubAgentActivityEvent),
    /// A message to the user that does not hold the turn.
    AsyncAgentMessage(crate::AsyncAgentMessageEvent),
    /// The model started a `clock.sleep`.
    SleepStarted(crate::SleepEvent),
    /// A `clock.sleep` ended (its time passed, new input came, or the turn was interrupted).
    SleepEnded(crate::SleepEvent),
    /// A `spawn_agents_on_csv` job made progress.
    AgentJobProgress(AgentJobProgressEvent),
    /// An MCP server changed state while starting.
    McpStartupUpdate(super::McpStartupUpdateEvent),
    /// Every configured MCP server has started or failed.
    McpStartupComplete(super::McpStartupCompleteEvent),
    /// The model called a tool of an MCP server.
    McpToolCallBegin(super::McpToolCallBeginEvent),
    /// An MCP server reported progress on a running call.
    McpToolCallProgress(super::McpToolCallProgressEvent),
    /// An MCP tool call ended.
    McpToolCallEnd(super::McpToolCallEndEvent),
    /// An MCP server asks the user for input.
    ElicitationRequest(super::ElicitationRequestEvent),
    /// The model called a tool the client defined; the client runs it and answers.
    DynamicToolCallRequest(super::DynamicToolCallRequestEvent),
    /// A call of a client's tool ended.
    DynamicToolCallEnd(super::DynamicToolCallEndEvent),
    /// The model called a tool the embedding program registered.
    ToolCallBegin(super::ToolCallBeginEvent),
    /// A call of the embedding program's tool ended.
    ToolCallEnd(super::ToolCallEndEvent),
    /// A review turn started; the request says what it looks at.
    EnteredReviewMode(super::ReviewRequest),
    /// A review turn ended, with its findings unless it was stopped.
    ExitedReviewMode(super::ExitedReviewModeEvent),
    /// The thread's goal was set or changed, or its usage grew.
    ThreadGoalUpdated(super::ThreadGoalUpdatedEvent),
    /// The thread's goal was removed.
    ThreadGoalCleared,
    /// The conversation has shut down; no more events follow.
    ShutdownComplete,
}

/// Payload of `thread_rolled_back`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadRolledBackEvent {
    /// How many turns were dropped.
    pub num_turns: u32,
}

/// Payload of `session_configured`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionConfiguredEvent {
    /// The conversation's id (Codex calls it the session id).
    pub session_id: ConversationId,
    /// The model being sampled.
    pub model: String,
    /// The provider id from configuration.
    pub model_provider_id: String,
    /// The approval policy in force.
    pub approval_policy: AskForApproval,
    /// The sandbox policy in force.
    pub sandbox_policy: SandboxPolicy,
    /// The working directory.
    pub cwd: PathBuf,
    /// Reasoning effort, when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Identifies the user-input history log (0 when unused).
    #[serde(default)]
    pub history_log_id: u64,
    /// Entries in that log.
    #[serde(default)]
    pub history_entry_count: usize,
    /// On resume, the events that rebuild the transcript for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_messages: Option<Vec<EventMsg>>,
    /// The rollout file recording this conversation, unless it is ephemeral.
    #[serde(default)]
    pub rollout_path: Option<PathBuf>,
}

/// Payload of `task_started`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStartedEvent {
    /// The turn that started.
    pub turn_id: TurnId,
    /// The model's context window, when known.
    #[serde(default)]
    pub model_context_window: Option<u64>,
    /// When it started, Unix seconds (absent in files written before Keel recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
}

/// Payload of `task_complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskCompleteEvent {
    /// The turn that completed.
    pub turn_id: TurnId,
    /// The last assistant message of the turn, if there was one.
    pub last_agent_message: Option<String>,
    /// When it ended, Unix seconds (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// How long it ran, in milliseconds (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// Payload of `user_message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserMessageEvent {
    /// The text of the input.
    pub message: String,
    /// Image URLs in the input.
    #[serde(default)]
    pub images: Vec<String>,
}

/// Payload of `agent_message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentMessageEvent {
    /// The whole message.
    pub message: String,
}

/// Payload of `agent_message_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentMessageDeltaEvent {
    /// The next piece of text.
    pub delta: String,
}

/// Payload of `agent_reasoning`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentReasoningEvent {
    /// The whole reasoning summary.
    pub text: String,
}

/// Payload of `agent_reasoning_section_break`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentReasoningSectionBreakEvent {
    /// Its position among the reasoning item's summary parts.
    pub summary_index: u32,
}

/// Payload of `agent_reasoning_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentReasoningDeltaEvent {
    /// The next piece of text.
    pub delta: String,
}

/// Payload of `turn_diff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnDiffEvent {
    /// Every file changed in the turn so far, as one unified diff.
    pub unified_diff: String,
}

/// Payload of `token_count`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenCountEvent {
    /// Usage so far, once the model has reported any.
    pub info: Option<TokenUsageInfo>,
}

/// Payload of `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorEvent {
    /// What went wrong, readable by a user.
    pub message: String,
    /// What kind of failure it was, when the engine knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_error_info: Option<super::CodexErrorInfo>,
}

impl ErrorEvent {
    /// An error of no particular kind.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            codex_error_info: None,
        }
    }
}

/// Payload of `warning`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WarningEvent {
    /// What the user should know.
    pub message: String,
}

/// Payload of `background_event`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackgroundEventEvent {
    /// The progress to show.
    pub message: String,
}

/// Payload of `stream_error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StreamErrorEvent {
    /// What failed and what happens next (e.g. "retrying 2/5 in 400ms").
    pub message: String,
}

/// Why a turn was aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnAbortReason {
    /// The client sent `Op::Interrupt` or answered an approval with `abort`.
    Interrupted,
    /// A new turn replaced it.
    Replaced,
}

/// Payload of `context_compaction_started` and `context_compacted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextCompactionEvent {
    /// Names this compaction in both events (and as the client's item id).
    pub id: String,
    /// The turn it ran in.
    pub turn_id: TurnId,
}

/// Payload of `turn_aborted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnAbortedEvent {
    /// The turn that was stopped.
    #[serde(default)]
    pub turn_id: Option<TurnId>,
    /// Why.
    pub reason: TurnAbortReason,
    /// When it was stopped, Unix seconds (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// How long it ran, in milliseconds (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// Payload of `hook_started` and `hook_completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookRunEvent {
    /// The turn, when the event belongs to one.
    pub turn_id: Option<String>,
    /// The run, in the app-server's shape.
    pub run: crate::app_server::HookRunSummary,
}

/// Payload of `skills_changed`: nothing; clients list the skills again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsChangedEvent {}
