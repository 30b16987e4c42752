//! Events a server emits for the processes of one connection.

use bytes::Bytes;
use keel_protocol::ExecSessionId;
use keel_protocol::exec_server::ExecOutputStream;

/// Output or exit of a process, as the handler emits it and as the client delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecServerEvent {
    /// A chunk of output, in order per stream.
    Output {
        /// The process that wrote it.
        session_id: ExecSessionId,
        /// `Stdout` for a PTY, else the pipe it came from.
        stream: ExecOutputStream,
        /// The bytes.
        chunk: Bytes,
    },
    /// The process exited; no output for it follows.
    Exited {
        /// The process that exited.
        session_id: ExecSessionId,
        /// Its exit status, `128 + N` when killed by signal N.
        exit_code: i32,
    },
}

impl ExecServerEvent {
    /// The session the event belongs to.
    pub fn session_id(&self) -> &ExecSessionId {
        match self {
            Self::Output { session_id, .. } | Self::Exited { session_id, .. } => session_id,
        }
    }
}
