//! The `patch.v1` extension: a patch planned and applied by the exec-server, on its host, so a
//! turn whose commands run there edits files there too. The server checks every write against
//! the sandbox policy the engine sends (symlinks resolved on its side): no write leaves the
//! writable roots.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{FileChange, SandboxPolicy};

/// Params of `patch/plan` and `patch/apply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchParams {
    /// The patch, in the `apply_patch` format (`*** Begin Patch` ... `*** End Patch`).
    pub patch: String,
    /// The absolute directory relative paths in the patch are resolved against.
    pub cwd: PathBuf,
    /// The policy writes are checked against; absent: not checked (no sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
    /// The commands' `$TMPDIR`, writable under `workspace-write` unless excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmpdir: Option<PathBuf>,
    /// Whether a root's `.git` is writable (read-only by default).
    #[serde(default)]
    pub allow_git_writes: bool,
    /// For `patch/apply`: each file's contents as the approved plan saw them (`null`: it did
    /// not exist); a file that changed since fails the patch. Absent: not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_before: Option<BTreeMap<PathBuf, Option<String>>>,
}

/// One file a patch writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchWrite {
    /// The path as the patch names it (absolute, normalised).
    pub path: PathBuf,
    /// Where the write lands once symlinks are followed.
    pub real_path: PathBuf,
    /// The file's contents now; absent when it does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Its contents after the patch; absent when the patch removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// What `patch/plan` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum PatchPlanResponse {
    /// The patch applies: its changes, its writes, and the roots the server checked them
    /// against (as written and with symlinks resolved).
    #[serde(rename_all = "camelCase")]
    Planned {
        /// The changes, keyed by path (a move is an update keyed by its source).
        changes: BTreeMap<PathBuf, FileChange>,
        /// The files written, in order.
        writes: Vec<PatchWrite>,
        /// The writable roots; absent when no policy was sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        writable_roots: Option<Vec<PathBuf>>,
        /// Paths inside the roots that stay read-only.
        #[serde(default)]
        read_only_subpaths: Vec<PathBuf>,
    },
    /// The patch is malformed or does not match the files.
    Invalid {
        /// What is wrong, naming the file and hunk.
        message: String,
    },
    /// A write would leave the writable roots through a symlink.
    Refused {
        /// Which write, and where it would land.
        message: String,
    },
}

/// What `patch/apply` did. Nothing is changed unless it is `applied`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum PatchApplyResponse {
    /// Every write landed.
    Applied {
        /// The files added, modified and deleted, as `apply_patch` reports them.
        summary: String,
    },
    /// The patch could not be applied.
    Failed {
        /// Why.
        message: String,
    },
    /// A write would leave the writable roots through a symlink.
    Refused {
        /// Which write, and where it would land.
        message: String,
    },
}
