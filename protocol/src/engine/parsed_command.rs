//! A best-effort reading of what a shell command does, for compact display by clients.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a command appears to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ParsedCommand {
    /// Reads a file (`cat`, `sed -n`, `head`...).
    Read {
        /// The command text.
        cmd: String,
        /// The file's name.
        name: String,
        /// The file's path, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<PathBuf>,
    },
    /// Lists files (`ls`, `find`...).
    ListFiles {
        /// The command text.
        cmd: String,
        /// The directory listed, when known.
        path: Option<String>,
    },
    /// Searches file contents (`grep`, `rg`...).
    Search {
        /// The command text.
        cmd: String,
        /// The search pattern, when known.
        query: Option<String>,
        /// Where it searches, when known.
        path: Option<String>,
    },
    /// Anything else.
    Unknown {
        /// The command text.
        cmd: String,
    },
}
