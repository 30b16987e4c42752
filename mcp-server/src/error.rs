//! The crate's error type: what can stop the server itself. Configuration errors are boxed:
//! they are large and rare. A failing tool call is never an
//! error here; it becomes an `isError` tool result or a JSON-RPC error response.

use std::path::PathBuf;

/// Everything that can stop [`crate::serve`] or [`crate::run_main`].
#[derive(Debug, thiserror::Error)]
pub enum McpServerError {
    /// The Keel home directory could not be found.
    #[error("cannot find the Keel home directory: {0}")]
    Home(#[source] Box<keel_core::ConfigError>),

    /// A `-c key=value` override is malformed.
    #[error("invalid -c override: {0}")]
    Override(#[source] Box<keel_core::ConfigError>),

    /// `config.toml` could not be read or is invalid; checked at startup so a broken setup
    /// fails loudly instead of on the first tool call.
    #[error("invalid configuration in {home}: {source}")]
    Config {
        /// The Keel home directory.
        home: PathBuf,
        /// What is wrong.
        #[source]
        source: Box<keel_core::ConfigError>,
    },

    /// `--listen` is not an `http://IP:PORT` URL.
    #[error("invalid --listen URL `{url}`: {reason}")]
    ListenUrl {
        /// What was given.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The HTTP listener could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address asked for.
        address: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },

    /// The listener's authentication flags are wrong (or leave a network listener open).
    #[error(transparent)]
    ListenerAuth(#[from] keel_exec_server::listener_auth::ListenerAuthError),

    /// Reading the client's messages failed.
    #[error("reading from the client: {0}")]
    Read(#[source] std::io::Error),

    /// Writing to the client failed (other than the client going away).
    #[error("writing to the client: {0}")]
    Write(#[source] std::io::Error),

    /// One of the server's tasks panicked.
    #[error("the {task} task failed: {source}")]
    Task {
        /// Which task.
        task: &'static str,
        /// The join error.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// The crate's result type.
pub type Result<T, E = McpServerError> = std::result::Result<T, E>;
