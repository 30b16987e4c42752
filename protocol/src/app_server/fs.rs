//! `fs/*`: file access for clients that cannot reach the server's disk. Absolute paths only.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Base64Bytes;

/// Params naming one path (`fs/readFile`, `fs/getMetadata`, `fs/readDirectory`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FsPathParams {
    /// An absolute path.
    pub path: PathBuf,
}

/// Result of `fs/readFile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsReadFileResponse {
    /// The file's bytes.
    pub data_base64: Base64Bytes,
}

/// Params of `fs/writeFile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsWriteFileParams {
    /// An absolute path; the parent directory must exist.
    pub path: PathBuf,
    /// The bytes to write (replacing any content).
    pub data_base64: Base64Bytes,
}

/// Params of `fs/createDirectory`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FsCreateDirectoryParams {
    /// An absolute path.
    pub path: PathBuf,
    /// Create missing parents too (default `true`).
    #[serde(default)]
    pub recursive: Option<bool>,
}

/// Result of `fs/getMetadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsGetMetadataResponse {
    /// It is a directory.
    pub is_directory: bool,
    /// It is a regular file.
    pub is_file: bool,
    /// Creation time in Unix ms (0 when the filesystem does not record it).
    pub created_at_ms: i64,
    /// Last modification in Unix ms.
    pub modified_at_ms: i64,
}

/// One entry of `fs/readDirectory`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsReadDirectoryEntry {
    /// The entry's name.
    pub file_name: String,
    /// It is a directory.
    pub is_directory: bool,
    /// It is a regular file.
    pub is_file: bool,
}

/// Result of `fs/readDirectory`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FsReadDirectoryResponse {
    /// Entries sorted by name.
    pub entries: Vec<FsReadDirectoryEntry>,
}

/// Params of `fs/remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FsRemoveParams {
    /// An absolute path.
    pub path: PathBuf,
    /// Remove a directory and everything in it (default `true`).
    #[serde(default)]
    pub recursive: Option<bool>,
    /// Succeed when the path does not exist (default `true`).
    #[serde(default)]
    pub force: Option<bool>,
}

/// Params of `fs/copy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsCopyParams {
    /// An absolute source path.
    pub source_path: PathBuf,
    /// An absolute destination path.
    pub destination_path: PathBuf,
    /// Required to copy a directory.
    #[serde(default)]
    pub recursive: bool,
}

/// Params of `fs/watch` (Codex 0.171).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsWatchParams {
    /// An absolute file or directory path.
    pub path: PathBuf,
    /// The client's name for the watch, unique on its connection.
    pub watch_id: String,
}

/// Result of `fs/watch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsWatchResponse {
    /// The watched path, canonical.
    pub path: PathBuf,
}

/// Params of `fs/unwatch` (Codex 0.171).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsUnwatchParams {
    /// The watch to stop.
    pub watch_id: String,
}

/// `fs/changed`: paths under a watch changed (Codex 0.171).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FsChangedNotification {
    /// The watch.
    pub watch_id: String,
    /// The files or directories that changed.
    pub changed_paths: Vec<PathBuf>,
}
