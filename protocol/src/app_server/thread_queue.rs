//! `thread/queue/*`: messages kept for a thread and delivered, in order, as its next turns
//! once it is idle (Codex 0.171's experimental queue, which `codex queue` and its TUI use).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Turn, UserInput};

/// A message waiting for its thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedSubmission {
    /// Its id.
    pub id: String,
    /// What the turn will be given.
    pub input: Vec<UserInput>,
    /// The id the client gave it.
    pub client_user_message_id: String,
    /// Metadata kept with it.
    #[serde(default)]
    pub responsesapi_client_metadata: Option<BTreeMap<String, String>>,
}

/// Params of `thread/queue/add`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueAddParams {
    /// The thread.
    pub thread_id: String,
    /// The client's id for the message.
    pub client_user_message_id: String,
    /// What the turn will be given.
    pub input: Vec<UserInput>,
    /// Metadata kept with it.
    #[serde(default)]
    pub responsesapi_client_metadata: Option<BTreeMap<String, String>>,
}

/// Result of `thread/queue/add` and `thread/queue/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueSubmissionResponse {
    /// The message as queued.
    pub queued_submission: QueuedSubmission,
}

/// Params of `thread/queue/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueListParams {
    /// The thread.
    pub thread_id: String,
    /// From the previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size (default 25).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Result of `thread/queue/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueListResponse {
    /// The messages, in delivery order.
    pub data: Vec<QueuedSubmission>,
    /// Pass as `cursor` for the next page; `null` at the end.
    pub next_cursor: Option<String>,
}

/// Params of `thread/queue/delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueDeleteParams {
    /// The thread.
    pub thread_id: String,
    /// The message.
    pub queued_submission_id: String,
}

/// Result of `thread/queue/delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueDeleteResponse {
    /// Whether there was such a message.
    pub deleted: bool,
}

/// Params of `thread/queue/reorder`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueReorderParams {
    /// The thread.
    pub thread_id: String,
    /// Every queued message's id, in the new order.
    pub queued_submission_ids: Vec<String>,
}

/// Params of `thread/queue/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueUpdateParams {
    /// The thread.
    pub thread_id: String,
    /// The message.
    pub queued_submission_id: String,
    /// Its new input.
    pub input: Vec<UserInput>,
    /// New metadata; omitted or empty keeps the old.
    #[serde(default)]
    pub responsesapi_client_metadata: Option<BTreeMap<String, String>>,
}

/// Params of `thread/queue/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueStartParams {
    /// The thread (loaded and idle).
    pub thread_id: String,
    /// The message to run now; the first one when omitted.
    #[serde(default)]
    pub queued_submission_id: Option<String>,
}

/// Result of `thread/queue/start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueStartResponse {
    /// The turn the message started.
    pub turn: Turn,
}

/// `thread/queue/changed`: a thread's queue changed (read it with `thread/queue/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadQueueChangedNotification {
    /// The thread.
    pub thread_id: String,
}
