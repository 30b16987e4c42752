//! A change to one file, as a patch proposes it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FileChange {
    /// Creates the file with this content.
    Add {
        /// The new file's content.
        content: String,
    },
    /// Removes the file; `content` is what it held.
    Delete {
        /// The content being removed.
        content: String,
    },
    /// Edits the file, optionally moving it.
    Update {
        /// The edit as a unified diff.
        unified_diff: String,
        /// Where the file moves to, if it moves.
        move_path: Option<PathBuf>,
    },
}
