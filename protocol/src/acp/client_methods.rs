//! The editor's own methods the agent calls when the editor offers them: its files
//! (`fs/*`, which see unsaved buffers) and its terminals (`terminal/*`).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `fs/read_text_file`.
pub const READ_TEXT_FILE: &str = "fs/read_text_file";
/// `fs/write_text_file`.
pub const WRITE_TEXT_FILE: &str = "fs/write_text_file";
/// `terminal/create`.
pub const TERMINAL_CREATE: &str = "terminal/create";
/// `terminal/output`.
pub const TERMINAL_OUTPUT: &str = "terminal/output";
/// `terminal/wait_for_exit`.
pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
/// `terminal/kill`.
pub const TERMINAL_KILL: &str = "terminal/kill";
/// `terminal/release`.
pub const TERMINAL_RELEASE: &str = "terminal/release";

/// Params of `fs/read_text_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileRequest {
    /// The session asking.
    pub session_id: String,
    /// The file (absolute).
    pub path: PathBuf,
    /// The first line wanted (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// How many lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// Result of `fs/read_text_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileResponse {
    /// The text as the editor holds it.
    pub content: String,
}

/// Params of `fs/write_text_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileRequest {
    /// The session asking.
    pub session_id: String,
    /// The file (absolute).
    pub path: PathBuf,
    /// Its new text.
    pub content: String,
}

/// An environment variable of a terminal's command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvVariable {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// Params of `terminal/create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalRequest {
    /// The session asking.
    pub session_id: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment.
    #[serde(default)]
    pub env: Vec<EnvVariable>,
    /// Where it runs (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Output bytes the editor keeps (the start is cut beyond).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_byte_limit: Option<u64>,
}

/// Result of `terminal/create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalResponse {
    /// The terminal, for the other `terminal/*` methods and for tool call content.
    pub terminal_id: String,
}

/// Params of `terminal/output`, `terminal/wait_for_exit`, `terminal/kill` and
/// `terminal/release`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalRequest {
    /// The session asking.
    pub session_id: String,
    /// The terminal.
    pub terminal_id: String,
}

/// How a terminal's command ended (result of `terminal/wait_for_exit`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalExitStatus {
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u32>,
    /// The signal that ended it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// Result of `terminal/output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOutputResponse {
    /// What the terminal showed.
    pub output: String,
    /// Whether its start was cut.
    pub truncated: bool,
    /// How the command ended, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<TerminalExitStatus>,
}
