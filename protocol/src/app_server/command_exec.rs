//! `command/exec`: run a standalone command (outside any thread) for the client.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Base64Bytes;
use crate::exec_server::ExecOutputStream;

/// A terminal size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandExecTerminalSize {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// Params of `command/exec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecParams {
    /// Program and arguments.
    pub command: Vec<String>,
    /// Absolute working directory (default: the server's).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The sandbox the command runs under (default: the server's configured `sandbox_mode`).
    /// `dangerFullAccess` is honoured only when that is the server's own mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<super::SandboxPolicyV2>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Run on a pseudo-terminal.
    #[serde(default)]
    pub tty: bool,
    /// Initial terminal size for `tty`.
    #[serde(default)]
    pub size: Option<CommandExecTerminalSize>,
    /// Client-chosen id for `/write`, `/resize`, `/terminate` and `outputDelta`.
    #[serde(default)]
    pub process_id: Option<String>,
    /// Keep stdin open for `command/exec/write`.
    #[serde(default)]
    pub stream_stdin: bool,
    /// Send output as `command/exec/outputDelta` notifications while it runs.
    #[serde(default)]
    pub stream_stdout_stderr: bool,
    /// Kill the command after this long (default 60 s).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Do not apply the timeout.
    #[serde(default)]
    pub disable_timeout: bool,
    /// Cap on the output returned in the response (default 1 MiB per stream).
    #[serde(default)]
    pub output_bytes_cap: Option<u64>,
    /// Return all output, however large.
    #[serde(default)]
    pub disable_output_cap: bool,
}

/// Result of `command/exec`, sent when the command exits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecResponse {
    /// Exit status (`128 + signal` when killed).
    pub exit_code: i32,
    /// Captured stdout (empty when streamed).
    pub stdout: String,
    /// Captured stderr (empty when streamed).
    pub stderr: String,
}

/// Params of `command/exec/write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecWriteParams {
    /// The process.
    pub process_id: String,
    /// Bytes for its stdin.
    #[serde(default)]
    pub delta_base64: Option<Base64Bytes>,
    /// Close stdin after writing.
    #[serde(default)]
    pub close_stdin: bool,
}

/// Params of `command/exec/resize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecResizeParams {
    /// The process.
    pub process_id: String,
    /// The new size.
    pub size: CommandExecTerminalSize,
}

/// Params of `command/exec/terminate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecTerminateParams {
    /// The process.
    pub process_id: String,
}

/// `command/exec/outputDelta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecOutputDeltaNotification {
    /// The process.
    pub process_id: String,
    /// Which stream.
    pub stream: ExecOutputStream,
    /// The bytes.
    pub delta_base64: Base64Bytes,
    /// `true` once the output cap was reached and further output is dropped.
    pub cap_reached: bool,
}
