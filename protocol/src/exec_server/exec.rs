//! `command/exec` and the methods that control a running process.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Base64Bytes, ExecSessionId};

/// Params of `command/exec`: an already-resolved command to start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecParams {
    /// Program and arguments; must not be empty.
    pub argv: Vec<String>,
    /// Absolute working directory.
    pub cwd: PathBuf,
    /// The complete environment of the process (nothing is inherited).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `true` runs the process on a pseudo-terminal; `false` uses pipes with stdin closed.
    #[serde(default)]
    pub tty: bool,
    /// Overrides `argv[0]` as the process sees it.
    #[serde(default)]
    pub arg0: Option<String>,
    /// The caller's span as a W3C `traceparent`: a server that traces makes the process's
    /// span its child. Optional and additive (a server that does not trace ignores it, and
    /// it is left out when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// Result of `command/exec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecResponse {
    /// Names the process in every later call and notification.
    pub session_id: ExecSessionId,
}

/// Params of `command/exec/write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteParams {
    /// The target process.
    pub session_id: ExecSessionId,
    /// Bytes to write to its stdin.
    pub chunk: Base64Bytes,
}

/// Result of `command/exec/write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteResponse {
    /// `true` once the bytes are queued for the process.
    pub accepted: bool,
}

/// How `command/exec/terminate` stops a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TerminateMode {
    /// SIGKILL the process group at once.
    #[serde(rename = "force")]
    Force,
    /// SIGTERM the process group, then SIGKILL it if it is still running after the timeout.
    #[serde(rename = "graceful")]
    Graceful {
        /// How long to wait between SIGTERM and SIGKILL.
        #[serde(rename = "timeoutMs")]
        timeout_ms: u64,
    },
}

/// Params of `command/exec/terminate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminateParams {
    /// The target process.
    pub session_id: ExecSessionId,
    /// How to stop it; the server's default grace period applies when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<TerminateMode>,
}

/// Result of `command/exec/terminate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminateResponse {
    /// `true` if a live process was signalled; `false` if it had already finished.
    pub running: bool,
}

/// Params of `command/exec/resize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResizeParams {
    /// The target process; must be PTY-backed.
    pub session_id: ExecSessionId,
    /// Terminal height in rows.
    pub rows: u16,
    /// Terminal width in columns.
    pub cols: u16,
}

/// Result of `command/exec/resize` (empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResizeResponse {}

/// Params of `command/exec/closeStdin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseStdinParams {
    /// The target process.
    pub session_id: ExecSessionId,
}

/// Result of `command/exec/closeStdin` (empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CloseStdinResponse {}

/// Params of `command/exec/wait`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitParams {
    /// The target process.
    pub session_id: ExecSessionId,
    /// Give up after this long; wait indefinitely when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// Result of `command/exec/wait`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitResponse {
    /// The exit status, or `None` if the wait timed out.
    pub exit_code: Option<i32>,
    /// `true` when the timeout elapsed before the process exited.
    pub timed_out: bool,
}

/// Params of `command/exec/snapshot`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotParams {
    /// The target process.
    pub session_id: ExecSessionId,
}

/// Result of `command/exec/snapshot`: the retained output (head and tail, capped by the
/// server's configuration) and the process state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotResponse {
    /// Retained stdout of a pipe-backed process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<Base64Bytes>,
    /// Retained stderr of a pipe-backed process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<Base64Bytes>,
    /// Retained terminal output of a PTY-backed process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<Base64Bytes>,
    /// `true` when output was dropped from the middle to respect the cap.
    pub truncated: bool,
    /// The exit status, once the process has exited.
    pub exit_code: Option<i32>,
    /// `true` while the process is running.
    pub running: bool,
}
