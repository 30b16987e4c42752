//! Whether a person has seen a thread's latest results: `thread/readState/*` (Codex 0.169).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a thread's unread part begins; `firstUnread: null` means everything was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadState {
    /// The first thing not yet read, or `null` when all of it was.
    #[serde(default)]
    pub first_unread: Option<ThreadUnreadPosition>,
    /// Changes with every change of the state, so an update made from a stale view is refused.
    pub revision: String,
}

/// The first unread position of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadUnreadPosition {
    /// Marked unread by a person: the whole thread.
    ThreadStart,
    /// The earliest completed turn nobody has looked at since.
    #[serde(rename_all = "camelCase")]
    Turn {
        /// That turn.
        turn_id: String,
    },
}

/// What `thread/readState/update` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadReadStateOperation {
    /// Everything was seen.
    Read,
    /// Show the thread as unread again.
    Unread,
}

/// Params of `thread/readState/update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadStateUpdateParams {
    /// The thread.
    pub thread_id: String,
    /// Mark it read or unread.
    pub operation: ThreadReadStateOperation,
    /// The revision the client last saw; the update is refused if the state moved on since.
    #[serde(default)]
    pub expected_revision: Option<String>,
}

/// Result of `thread/readState/update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadStateUpdateResponse {
    /// The state after the update.
    pub read_state: ThreadReadState,
}

/// Params of `thread/readState/changed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadStateChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new state.
    pub read_state: ThreadReadState,
}
