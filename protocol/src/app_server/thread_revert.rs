//! `thread/revert`: drop a turn and every later one, optionally putting files back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `thread/revert`: drop a turn and every later one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRevertParams {
    /// The thread.
    pub thread_id: String,
    /// The first turn to drop; it and every later turn go.
    pub before_turn_id: String,
    /// Keel's addition: also put the workspace's files back as they were before that turn.
    /// All or nothing: a file changed since by someone else stops the revert.
    #[serde(default)]
    pub restore_files: bool,
}

/// Result of `thread/revert`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRevertResponse {
    /// The thread, with the turns it kept.
    pub thread: super::Thread,
    /// Paging cursors of Codex's paginated history (Keel's threads answer whole: `null`).
    #[serde(default)]
    pub items_backwards_cursor: Option<String>,
    /// Paging cursors of Codex's paginated history (Keel's threads answer whole: `null`).
    #[serde(default)]
    pub turns_backwards_cursor: Option<String>,
    /// Keel's addition: the files put back or removed, relative to the working directory
    /// (with `restoreFiles`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored_files: Vec<std::path::PathBuf>,
}
