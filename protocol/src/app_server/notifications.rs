//! Params of the server → client notifications.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Thread, ThreadItem, ThreadStatus, ThreadTokenUsage, Turn, TurnError, TurnPlanStep};
use crate::RequestId;

/// `thread/started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadStartedNotification {
    /// The new thread.
    pub thread: Thread,
}

/// `thread/status/changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new status.
    pub status: ThreadStatus,
}

/// `thread/archived`, `thread/unarchived` and `thread/closed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadIdNotification {
    /// The thread.
    pub thread_id: String,
}

/// `thread/name/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadNameUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new name.
    pub thread_name: Option<String>,
}

/// `thread/tokenUsage/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsageUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn that used them.
    pub turn_id: String,
    /// Usage so far.
    pub token_usage: ThreadTokenUsage,
}

/// `turn/started` and `turn/completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn (with all its items when completed).
    pub turn: Turn,
}

/// `turn/diff/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnDiffUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// Every file changed in the turn so far, as one unified diff.
    pub diff: String,
}

/// `turn/plan/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// Why the plan changed.
    pub explanation: Option<String>,
    /// The whole plan.
    pub plan: Vec<TurnPlanStep>,
}

/// `item/started`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item: ThreadItem,
    /// When it started, in milliseconds since the Unix epoch (Codex 0.169 clients need it).
    #[serde(default)]
    pub started_at_ms: i64,
}

/// `item/completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item: ThreadItem,
    /// When it ended, in milliseconds since the Unix epoch (Codex 0.169 clients need it).
    #[serde(default)]
    pub completed_at_ms: i64,
}

/// `item/agentMessage/delta`, `item/commandExecution/outputDelta` and
/// `item/fileChange/outputDelta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item the text belongs to.
    pub item_id: String,
    /// The next piece of text.
    pub delta: String,
}

/// `thread/compacted`: a thread's history was compacted (clients that know the
/// `contextCompaction` item can use that instead).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompactedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn the compaction ran in.
    pub turn_id: String,
}

/// `item/commandExecution/terminalInteraction`: the model typed into a running command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalInteractionNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command's item.
    pub item_id: String,
    /// The session id the model names the process by.
    pub process_id: String,
    /// What was written.
    pub stdin: String,
}

/// `item/reasoning/summaryTextDelta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The reasoning item.
    pub item_id: String,
    /// The next piece of summary text.
    pub delta: String,
    /// Which summary part it belongs to.
    pub summary_index: u32,
}

/// `item/reasoning/summaryPartAdded`: a new part of a reasoning item's summary starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryPartAddedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The reasoning item.
    pub item_id: String,
    /// The new part's position.
    pub summary_index: u32,
}

/// `account/rateLimits/updated`: how much of the provider's rate limits is used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountRateLimitsUpdatedNotification {
    /// The limits as of the latest response.
    pub rate_limits: crate::RateLimitSnapshot,
}

/// `error`: a turn failed, or a retry is under way (`willRetry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// What went wrong.
    pub error: TurnError,
    /// `true` when the engine is retrying.
    pub will_retry: bool,
}

/// `warning`: something the user should know that fails nothing, such as streamed deltas
/// this client missed because it read too slowly (as Codex 0.169 names it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarningNotification {
    /// What happened, for a person.
    pub message: String,
    /// The thread it concerns, if one.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// `serverRequest/resolved`: a server request was settled without the client's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolvedNotification {
    /// The thread.
    pub thread_id: String,
    /// The request that no longer needs an answer.
    pub request_id: RequestId,
}

/// `configWarning`: something in the configuration the server loaded deserves the user's
/// attention (an unknown key, say); nothing failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigWarningNotification {
    /// What is wrong, in one line.
    pub summary: String,
    /// More on it (the key Keel suggests instead, say).
    #[serde(default)]
    pub details: Option<String>,
    /// The file it is in, when it is in a file.
    #[serde(default)]
    pub path: Option<String>,
    /// Where in the file (Keel does not locate it: always `null`).
    #[serde(default)]
    pub range: Option<serde_json::Value>,
}

impl super::ServerNotification {
    /// The thread the notification is about, if it is about one (a client following several
    /// threads routes by it).
    pub fn thread_id(&self) -> Option<&str> {
        use super::ServerNotification as N;
        Some(match self {
            N::ThreadStarted(n) => &n.thread.id,
            N::ThreadStatusChanged(n) => &n.thread_id,
            N::ThreadArchived(n)
            | N::ThreadUnarchived(n)
            | N::ThreadDeleted(n)
            | N::ThreadGoalCleared(n)
            | N::ThreadReverted(n)
            | N::ThreadClosed(n) => &n.thread_id,
            N::ThreadGoalUpdated(n) => &n.thread_id,
            N::ThreadReadStateChanged(n) => &n.thread_id,
            N::ThreadCompacted(n) => &n.thread_id,
            N::ThreadNameUpdated(n) => &n.thread_id,
            N::ThreadQueueChanged(n) => &n.thread_id,
            N::ThreadAttachmentUpdated(n) => &n.thread_id,
            N::ThreadSectionChanged(n) => &n.thread_id,
            N::ThreadSettingsUpdated(n) => &n.thread_id,
            N::ThreadEnvironmentConnected(n) | N::ThreadEnvironmentDisconnected(n) => &n.thread_id,
            N::ThreadTokenUsageUpdated(n) => &n.thread_id,
            N::TurnStarted(n) | N::TurnCompleted(n) => &n.thread_id,
            N::TurnDiffUpdated(n) => &n.thread_id,
            N::TurnPlanUpdated(n) => &n.thread_id,
            N::ItemStarted(n) => &n.thread_id,
            N::ItemCompleted(n) => &n.thread_id,
            N::AgentMessageDelta(n) | N::CommandExecutionOutputDelta(n) => &n.thread_id,
            N::TerminalInteraction(n) => &n.thread_id,
            N::ReasoningSummaryTextDelta(n) => &n.thread_id,
            N::ReasoningSummaryPartAdded(n) => &n.thread_id,
            N::ServerRequestResolved(n) => &n.thread_id,
            N::Error(n) => &n.thread_id,
            N::Warning(n) => return n.thread_id.as_deref(),
            N::HookStarted(n) | N::HookCompleted(n) => &n.thread_id,
            N::McpToolCallProgress(n) => &n.thread_id,
            N::McpServerStatusUpdated(n) => return n.thread_id.as_deref(),
            N::McpServerOauthLoginCompleted(n) => return n.thread_id.as_deref(),
            N::CommandExecOutputDelta(_)
            | N::AccountRateLimitsUpdated(_)
            | N::SkillsChanged(_)
            | N::ConfigWarning(_)
            | N::FuzzyFileSearchSessionUpdated(_)
            | N::FuzzyFileSearchSessionCompleted(_)
            | N::FsChanged(_)
            | N::AccountLoginCompleted(_)
            | N::AccountUpdated(_)
            | N::WindowsSandboxSetupCompleted(_)
            | N::ExternalAgentConfigImportProgress(_)
            | N::ExternalAgentConfigImportCompleted(_) => {
                return None;
            }
        })
    }
}
