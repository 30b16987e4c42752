//! Errors of the app-server, and their one mapping to JSON-RPC error objects.

use keel_protocol::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JsonRpcErrorObject, SERVER_OVERLOADED,
};

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppServerError {
    /// The params did not match the method's shape.
    #[error("invalid params for `{method}`: {message}")]
    InvalidParams {
        /// The method.
        method: String,
        /// What was wrong.
        message: String,
    },
    /// A request before `initialize`.
    #[error("Not initialized")]
    NotInitialized,
    /// A second `initialize`.
    #[error("Already initialized")]
    AlreadyInitialized,
    /// The request is well-formed but cannot be carried out (unknown thread, wrong turn, ...).
    #[error("{0}")]
    InvalidRequest(String),
    /// The server is saturated.
    #[error("Server overloaded; retry later.")]
    Overloaded,
    /// The engine failed.
    #[error(transparent)]
    Core(#[from] keel_core::CoreError),
    /// A write to `config.toml` was refused.
    #[error(transparent)]
    ConfigWrite(#[from] keel_core::config::ConfigWriteError),
    /// Configuration could not be resolved.
    #[error(transparent)]
    Config(#[from] keel_core::ConfigError),
    /// A filesystem operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Something that should not happen.
    #[error("internal error: {0}")]
    Internal(String),
    /// The exec-server failed.
    #[error(transparent)]
    ExecServer(#[from] keel_exec_server::ExecServerError),
    /// The transport could not be set up.
    #[error("{0}")]
    Transport(String),
    /// The request cannot be carried out, with the structured reason Codex clients branch on.
    #[error("{message}")]
    Refused {
        /// What is wrong, for a person.
        message: String,
        /// The reason, for a program (`{"type": …}` or `{"config_write_error_code": …}`).
        data: serde_json::Value,
    },
    /// A section, attachment or metadata change was refused or could not be stored.
    #[error(transparent)]
    Organizer(#[from] keel_core::ThreadOrganizerError),
    /// A read-state update was made from a stale view: the state moved on since.
    #[error("read state changed")]
    ReadStateConflict(keel_protocol::app_server::ThreadReadState),
}

impl From<keel_core::ThreadCatalogError> for AppServerError {
    fn from(err: keel_core::ThreadCatalogError) -> Self {
        match err {
            keel_core::ThreadCatalogError::Read(err) => Self::Core(err),
            other @ keel_core::ThreadCatalogError::UnknownCursor(_) => {
                Self::InvalidRequest(other.to_string())
            }
        }
    }
}

impl AppServerError {
    /// Whether the server's own flags are at fault (exit code 2), not something at run time.
    pub fn is_bad_flags(&self) -> bool {
        matches!(self, Self::ExecServer(err) if err.is_bad_flags())
    }

    /// The JSON-RPC error object a client receives.
    pub fn to_rpc_error(&self) -> JsonRpcErrorObject {
        let code = match self {
            Self::InvalidParams { .. } => INVALID_PARAMS,
            Self::NotInitialized
            | Self::AlreadyInitialized
            | Self::InvalidRequest(_)
            | Self::Refused { .. }
            | Self::ReadStateConflict(_)
            | Self::Core(
                keel_core::CoreError::ThreadHeld { .. } | keel_core::CoreError::LeaseLost(_),
            ) => INVALID_REQUEST,
            Self::Overloaded => SERVER_OVERLOADED,
            Self::Organizer(
                keel_core::ThreadOrganizerError::Database { .. }
                | keel_core::ThreadOrganizerError::Io { .. }
                | keel_core::ThreadOrganizerError::Unreadable { .. },
            ) => INTERNAL_ERROR,
            Self::Organizer(_) => INVALID_PARAMS,
            Self::Config(_) | Self::Core(keel_core::CoreError::InvalidTool(_)) => INVALID_PARAMS,
            Self::Io { .. } | Self::ConfigWrite(_) => INVALID_REQUEST,
            Self::Core(_) | Self::Internal(_) | Self::ExecServer(_) | Self::Transport(_) => {
                INTERNAL_ERROR
            }
        };
        let error = JsonRpcErrorObject::new(code, self.to_string());
        match self {
            // Codex clients branch on this member.
            Self::ConfigWrite(err) => JsonRpcErrorObject {
                data: Some(serde_json::json!({ "config_write_error_code": err.code() })),
                ..error
            },
            Self::Refused { data, .. } => JsonRpcErrorObject {
                data: Some(data.clone()),
                ..error
            },
            // The current state, so the client can show it and retry.
            Self::ReadStateConflict(current) => JsonRpcErrorObject {
                data: Some(serde_json::json!({
                    "reason": "readStateConflict",
                    "readState": current,
                })),
                ..error
            },
            // Another server runs a turn on the thread: who, and when to try again.
            Self::Core(keel_core::CoreError::ThreadHeld {
                holder,
                retry_after_secs,
                ..
            }) => JsonRpcErrorObject {
                data: Some(serde_json::json!({
                    "reason": "threadHeld",
                    "holder": holder,
                    "retryAfterSeconds": retry_after_secs,
                })),
                ..error
            },
            Self::Core(keel_core::CoreError::LeaseLost(_)) => JsonRpcErrorObject {
                data: Some(serde_json::json!({ "reason": "threadTakenOver" })),
                ..error
            },
            _ => error,
        }
    }
}

/// Result alias for the app-server.
pub type Result<T, E = AppServerError> = std::result::Result<T, E>;
