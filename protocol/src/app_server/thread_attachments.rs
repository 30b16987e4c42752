//! `thread/attachment*`: records a thread owns (a file a person attached, a link), each
//! identified by its type and identity key within the thread, with a payload Keel keeps as
//! given.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Something a thread owns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachment {
    /// Its id (a UUIDv7).
    pub id: String,
    /// What kind of thing it is, as the client names it.
    pub attachment_type: String,
    /// What identifies it within its type (a path, a URL).
    pub identity_key: String,
    /// The client's data, kept verbatim.
    pub payload: serde_json::Value,
    /// When it was added, Unix seconds.
    pub created_at: i64,
}

/// Params of `thread/attachment/add`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentAddParams {
    /// The owning thread.
    pub thread_id: String,
    /// What kind of thing it is.
    pub attachment_type: String,
    /// What identifies it within its type.
    pub identity_key: String,
    /// The client's data (any JSON, `null` included; the member is required).
    pub payload: serde_json::Value,
}

/// Whether `thread/attachment/add` stored something new.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadAttachmentAddOutcome {
    /// A new attachment.
    Created,
    /// The thread already had one with this type and key; it is returned unchanged.
    Existing,
}

/// Result of `thread/attachment/add`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentAddResponse {
    /// Created or existing.
    pub outcome: ThreadAttachmentAddOutcome,
    /// The attachment as stored.
    pub attachment: ThreadAttachment,
}

/// Params of `thread/attachment/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentListParams {
    /// The owning thread.
    pub thread_id: String,
    /// The previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Largest page.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Result of `thread/attachment/list`: oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentListResponse {
    /// This page's attachments.
    pub data: Vec<ThreadAttachment>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// Params of `thread/attachmentOwner/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentOwnerListParams {
    /// What kind of thing.
    pub attachment_type: String,
    /// What identifies it.
    pub identity_key: String,
    /// Only archived (`true`) or only live (`false`) owners; both when absent.
    #[serde(default)]
    pub archived: Option<bool>,
    /// The previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Largest page.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// A thread that owns an attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentOwner {
    /// The thread.
    pub thread_id: String,
    /// Whether it is archived.
    pub archived: bool,
}

/// Result of `thread/attachmentOwner/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentOwnerListResponse {
    /// This page's owners, in the order they attached it.
    pub data: Vec<ThreadAttachmentOwner>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// Params of `thread/attachment/remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentRemoveParams {
    /// The owning thread.
    pub thread_id: String,
    /// What kind of thing.
    pub attachment_type: String,
    /// What identifies it.
    pub identity_key: String,
}

/// What happened to an attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadAttachmentOperation {
    /// It was added.
    Created,
    /// It was removed.
    Deleted,
}

/// `thread/attachment/updated`: a thread gained or lost an attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadAttachmentUpdatedNotification {
    /// The owning thread.
    pub thread_id: String,
    /// What kind of thing.
    pub attachment_type: String,
    /// What identifies it.
    pub identity_key: String,
    /// Its id.
    pub attachment_id: String,
    /// Added or removed.
    pub operation: ThreadAttachmentOperation,
}
