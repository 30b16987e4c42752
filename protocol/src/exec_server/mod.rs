//! Messages of the exec-server protocol (`exec-server.v0`): a process service that starts,
//! feeds, resizes and stops programs for a client and streams their output back. camelCase on
//! the wire, JSON-RPC without the `jsonrpc` member.

mod exec;
mod fs;
mod handshake;
mod notifications;
mod patch;

pub use exec::*;
pub use fs::*;
pub use handshake::*;
pub use notifications::*;
pub use patch::*;

/// The protocol version the server reports from `initialize`.
pub const EXEC_SERVER_PROTOCOL_VERSION: &str = "exec-server.v0";

/// The extensions of `exec-server.v0` a Keel server announces in `initialize`: the planned
/// methods, `command/exec/terminate.mode` for terminate's `mode` parameter,
/// [`PATCH_EXTENSION`] and [`FS_EXTENSION`].
pub const EXEC_SERVER_EXTENSIONS: &[&str] = &[
    "command/exec/resize",
    "command/exec/closeStdin",
    "command/exec/wait",
    "command/exec/snapshot",
    "command/exec/terminate.mode",
    PATCH_EXTENSION,
    FS_EXTENSION,
];

/// The extension that offers `patch/plan` and `patch/apply` (version 1): a client applies a
/// patch on the server's host only when the server announces it.
pub const PATCH_EXTENSION: &str = "patch.v1";

crate::request_table! {
    /// Every request a client may send to an exec-server.
    pub enum ExecServerRequest in exec_server_request {
        /// Opens the handshake.
        Initialize("initialize", InitializeParams) -> InitializeResponse,
        /// Starts a process.
        Exec("command/exec", ExecParams) -> ExecResponse,
        /// Writes bytes to a PTY-backed process's stdin.
        Write("command/exec/write", WriteParams) -> WriteResponse,
        /// Signals a process to stop.
        Terminate("command/exec/terminate", TerminateParams) -> TerminateResponse,
        /// Changes a PTY's window size.
        Resize("command/exec/resize", ResizeParams) -> ResizeResponse,
        /// Closes a process's stdin so it sees end of input.
        CloseStdin("command/exec/closeStdin", CloseStdinParams) -> CloseStdinResponse,
        /// Waits for a process to exit, optionally bounded by a timeout.
        Wait("command/exec/wait", WaitParams) -> WaitResponse,
        /// Returns the retained output and state of a process.
        Snapshot("command/exec/snapshot", SnapshotParams) -> SnapshotResponse,
        /// Checks a patch against the server's files and its sandbox policy (`patch.v1`).
        PatchPlan("patch/plan", PatchParams) -> PatchPlanResponse,
        /// Applies a patch on the server's host, all or nothing (`patch.v1`).
        PatchApply("patch/apply", PatchParams) -> PatchApplyResponse,
        /// Reads a file on the server's host (`fs.v1`).
        FileRead("fs/read", FileReadParams) -> FileReadResponse,
        /// Tells whether a path exists on the server's host, and what it is (`fs.v1`).
        FileStat("fs/stat", FileStatParams) -> FileStatResponse,
        /// Lists a directory on the server's host (`fs.v1`).
        FileList("fs/list", FileListParams) -> FileListResponse,
    }
}

crate::notification_table! {
    /// Every notification a client may send to an exec-server.
    pub enum ExecServerClientNotification in exec_server_client_notification {
        /// Completes the handshake; exec methods are accepted after it.
        Initialized("initialized", InitializedParams),
    }
}

crate::notification_table! {
    /// Every notification an exec-server sends to its client.
    pub enum ExecServerNotification in exec_server_notification {
        /// A chunk of a process's output.
        OutputDelta("command/exec/outputDelta", OutputDeltaNotification),
        /// A process has exited; sent after all of its output.
        Exited("command/exec/exited", ExitedNotification),
    }
}
