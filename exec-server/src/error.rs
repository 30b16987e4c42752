//! The crate's error type and its one mapping to JSON-RPC error codes.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::{
    ExecSessionId, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JsonRpcErrorObject,
    SERVER_OVERLOADED,
};

/// Everything that can go wrong in the exec-server, its handler or its client.
#[derive(Debug, thiserror::Error)]
pub enum ExecServerError {
    /// An exec method arrived before `initialize`.
    #[error("not initialized: send `initialize` before `{method}`")]
    NotInitialized {
        /// The method that was rejected.
        method: &'static str,
    },
    /// An exec method arrived after `initialize` but before `initialized`.
    #[error("handshake incomplete: send the `initialized` notification before `{method}`")]
    HandshakeIncomplete {
        /// The method that was rejected.
        method: &'static str,
    },
    /// A second `initialize` on the same connection.
    #[error("`initialize` was already received on this connection")]
    AlreadyInitialized,
    /// A request method this server does not know.
    #[error("unknown method `{0}`")]
    UnknownMethod(String),
    /// Params that do not fit the method.
    #[error("invalid params: {0}")]
    InvalidParams(String),
    /// A session id this connection never issued (or has forgotten).
    #[error("unknown session id {0}")]
    UnknownSession(ExecSessionId),
    /// A write or close to a process whose stdin is closed (pipe-backed or exited).
    #[error("stdin is closed for session {0}")]
    StdinClosed(ExecSessionId),
    /// The process is not reading its input and its stdin queue is full.
    #[error("stdin queue of session {0} is full: the process is not reading its input")]
    StdinFull(ExecSessionId),
    /// `resize` on a pipe-backed process.
    #[error("session {0} is not backed by a terminal")]
    NotATerminal(ExecSessionId),
    /// `resize` on a process that has exited.
    #[error("session {0} has exited")]
    SessionExited(ExecSessionId),
    /// The connection already runs as many processes as the server allows.
    #[error("process limit reached: this connection already runs {limit} processes")]
    ProcessLimit {
        /// The configured maximum.
        limit: usize,
    },
    /// The server is shutting down and starts no new process.
    #[error("the exec-server is shutting down")]
    ShuttingDown,
    /// The OS refused to start the process.
    #[error("failed to spawn `{program}` in {}: {source}", cwd.display())]
    Spawn {
        /// `argv[0]` of the request.
        program: String,
        /// The requested working directory.
        cwd: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Opening or driving a pseudo-terminal failed.
    #[error("pseudo-terminal error while {context}: {message}")]
    Pty {
        /// What the server was doing.
        context: &'static str,
        /// The underlying error, rendered.
        message: String,
    },
    /// `--listen` named something the server cannot listen on.
    #[error("invalid listen url `{url}`: {reason} (expected `stdio://` or `ws://IP:PORT`)")]
    InvalidListenUrl {
        /// The rejected value.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The listener's authentication flags are unusable or would leave it open.
    #[error(transparent)]
    ListenerAuth(#[from] crate::listener_auth::ListenerAuthError),
    /// An I/O operation failed.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What the crate was doing.
        context: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A websocket operation failed.
    #[error("websocket error while {context}: {source}")]
    WebSocket {
        /// What the crate was doing.
        context: &'static str,
        /// The websocket error.
        source: Box<tokio_tungstenite::tungstenite::Error>,
    },
    /// A peer sent something that is not valid JSON-RPC for this protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server answered a request with an error.
    #[error("`{method}` failed: {error}")]
    Rpc {
        /// The request method.
        method: &'static str,
        /// The error the server sent.
        error: JsonRpcErrorObject,
    },
    /// The connection closed before the answer arrived.
    #[error("the connection to the exec-server is closed")]
    ConnectionClosed,
    /// An operation did not finish in time.
    #[error("timed out after {timeout:?} while {what}")]
    Timeout {
        /// What the client was waiting for.
        what: &'static str,
        /// The limit that elapsed.
        timeout: Duration,
    },
    /// A bearer token would travel unencrypted to another host.
    #[error(
        "refusing to send a bearer token over plain ws:// to a non-loopback host ({0}); reach the \
         server through a loopback tunnel (e.g. ssh -L)"
    )]
    TokenOverPlaintext(String),
    /// TLS for a `wss://` server could not be set up (no usable certificate roots, say).
    #[error("setting up TLS for the exec-server: {0}")]
    Tls(String),
    /// The server speaks a different protocol version.
    #[error("the exec-server speaks `{0}`, expected `exec-server.v0`")]
    UnsupportedVersion(String),
}

/// The crate's result type.
pub type Result<T, E = ExecServerError> = std::result::Result<T, E>;

impl ExecServerError {
    /// Whether the server's own flags are at fault (exit code 2), not something at run time.
    pub fn is_bad_flags(&self) -> bool {
        matches!(self, Self::ListenerAuth(_) | Self::InvalidListenUrl { .. })
    }

    /// The JSON-RPC error code a server reports for this error.
    pub fn rpc_code(&self) -> i64 {
        match self {
            Self::NotInitialized { .. }
            | Self::HandshakeIncomplete { .. }
            | Self::AlreadyInitialized
            | Self::UnknownSession(_)
            | Self::StdinClosed(_)
            | Self::NotATerminal(_)
            | Self::SessionExited(_)
            | Self::ProcessLimit { .. }
            | Self::UnknownMethod(_)
            | Self::ShuttingDown => INVALID_REQUEST,
            Self::StdinFull(_) => SERVER_OVERLOADED,
            Self::InvalidParams(_) => INVALID_PARAMS,
            Self::Spawn { .. }
            | Self::Pty { .. }
            | Self::InvalidListenUrl { .. }
            | Self::ListenerAuth(_)
            | Self::Io { .. }
            | Self::WebSocket { .. }
            | Self::Protocol(_)
            | Self::ConnectionClosed
            | Self::Timeout { .. }
            | Self::TokenOverPlaintext(_)
            | Self::Tls(_)
            | Self::UnsupportedVersion(_) => INTERNAL_ERROR,
            Self::Rpc { error, .. } => error.code,
        }
    }

    /// The JSON-RPC error object a server sends for this error.
    pub fn to_rpc_error(&self) -> JsonRpcErrorObject {
        JsonRpcErrorObject::new(self.rpc_code(), self.to_string())
    }

    pub(crate) fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Io { context, source }
    }

    pub(crate) fn ws(
        context: &'static str,
    ) -> impl FnOnce(tokio_tungstenite::tungstenite::Error) -> Self {
        move |source| Self::WebSocket {
            context,
            source: Box::new(source),
        }
    }
}
