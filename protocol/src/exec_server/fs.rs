//! The `fs.v1` extension: the files a turn reads for itself (its `AGENTS.md`, the project's
//! skills, an image the model asks to see) read on the exec-server's host, so a remote environment's turn sees its
//! own files. Read-only: writes go through `patch.v1`, which checks the sandbox.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Base64Bytes;

/// The extension that offers `fs/read`, `fs/stat` and `fs/list` (version 1).
pub const FS_EXTENSION: &str = "fs.v1";

/// Params of `fs/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileReadParams {
    /// The file, absolute.
    pub path: PathBuf,
    /// The largest file the client takes; a bigger one answers `tooLarge` without being
    /// read. Absent, or over the server's own limit (12 MiB less 64 KiB, whose base64 fits
    /// a 16 MiB message): that limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// What `fs/read` found. A missing file is an answer, not an error: callers probe for
/// optional files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum FileReadResponse {
    /// The file's bytes.
    #[serde(rename_all = "camelCase")]
    Read {
        /// The contents, base64.
        data_base64: Base64Bytes,
    },
    /// Nothing exists at the path.
    Missing,
    /// The file is larger than the limit.
    TooLarge {
        /// Its size in bytes.
        size: u64,
    },
    /// It exists but cannot be read (permissions, a directory, ...).
    Unreadable {
        /// The OS error.
        message: String,
    },
}

/// Params of `fs/stat`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileStatParams {
    /// The path, absolute; symlinks are followed.
    pub path: PathBuf,
}

/// What `fs/stat` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum FileStatResponse {
    /// Something exists there.
    #[serde(rename_all = "camelCase")]
    Found {
        /// A regular file.
        is_file: bool,
        /// A directory.
        is_directory: bool,
        /// Its size in bytes.
        size: u64,
    },
    /// Nothing exists at the path (or a symlink points nowhere).
    Missing,
    /// The path cannot be examined.
    Unreadable {
        /// The OS error.
        message: String,
    },
}

/// Params of `fs/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileListParams {
    /// The directory, absolute.
    pub path: PathBuf,
}

/// One entry of a directory; symlinks are followed to tell what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileListEntry {
    /// Its name in the directory (not valid UTF-8: lossily converted).
    pub file_name: String,
    /// A directory, or a link to one.
    pub is_directory: bool,
    /// A regular file, or a link to one.
    pub is_file: bool,
}

/// What `fs/list` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum FileListResponse {
    /// The directory's entries, sorted by name.
    Listed {
        /// Each entry (at most 10,000; more are left out).
        entries: Vec<FileListEntry>,
    },
    /// Nothing exists at the path.
    Missing,
    /// It exists but cannot be listed (not a directory, permissions, ...).
    Unreadable {
        /// The OS error.
        message: String,
    },
}
