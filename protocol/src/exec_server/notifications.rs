//! Server → client notifications: process output and exit.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Base64Bytes, ExecSessionId};

/// Which output stream a chunk came from. A PTY has one stream, reported as `stdout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecOutputStream {
    /// Standard output (or the terminal, for PTY-backed processes).
    Stdout,
    /// Standard error.
    Stderr,
}

/// Params of `command/exec/outputDelta`: bytes a process wrote, in order per stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputDeltaNotification {
    /// The process that wrote the bytes.
    pub session_id: ExecSessionId,
    /// The stream they were written to.
    pub stream: ExecOutputStream,
    /// The bytes, base64 on the wire.
    pub chunk: Base64Bytes,
}

/// Params of `command/exec/exited`. A process killed by signal N reports `128 + N`, as shells do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExitedNotification {
    /// The process that exited.
    pub session_id: ExecSessionId,
    /// Its exit status (`128 + signal` when killed by a signal).
    pub exit_code: i32,
}
