//! Why a process could not be started or driven.

/// Why a process could not be started or driven.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// Connecting to (or starting) the exec-server failed.
    #[error("could not reach the exec-server: {0}")]
    Connect(String),
    /// The exec-server refused or failed the request.
    #[error("{0}")]
    Request(#[from] keel_exec_server::ExecServerError),
    /// The connection went after the start request was sent: the server may have started
    /// the command, and nothing tells whether it ran.
    #[error(
        "the connection to the exec-server was lost while the command was being started: it may \
         have started (and run) there; its outcome is unknown and it is not run again"
    )]
    LostWhileStarting,
    /// The client's terminal failed (the editor refused or went away).
    #[error("the editor's terminal failed: {0}")]
    ClientTerminal(#[from] crate::ClientBackendError),
}

impl ProcessError {
    /// What the model reads when `command` could not be started (or may have been).
    pub(crate) fn start_failure(&self, command: &str) -> String {
        match self {
            Self::LostWhileStarting => format!("`{command}`: {self}"),
            other => format!("failed to start `{command}`: {other}"),
        }
    }
}
