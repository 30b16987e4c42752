//! The engine's error type. Each variant carries what a user needs to act on it.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::ConversationId;

/// Everything that can go wrong inside keel-core.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// Configuration could not be loaded or is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),

    /// The provider needs an API key that is not set.
    #[error("{0}")]
    MissingApiKey(String),

    /// The model provider could not be reached.
    #[error("could not reach the model provider at {url}: {source}")]
    Connect {
        /// The request URL.
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// The provider answered with an error status.
    #[error("model provider returned HTTP {status}: {body}")]
    HttpStatus {
        /// The HTTP status code.
        status: u16,
        /// The response body (truncated), usually the provider's error message.
        body: String,
        /// The provider's `Retry-After`, when given.
        retry_after: Option<Duration>,
    },

    /// The response stream broke before `response.completed`.
    #[error("model stream ended early: {0}")]
    Stream(String),

    /// The response stream sent nothing for too long.
    #[error("model stream was idle for {0:?}")]
    StreamIdle(Duration),

    /// The provider reported the response as failed.
    #[error("model response failed: {0}")]
    ResponseFailed(String),

    /// The turn was interrupted.
    #[error("turn interrupted")]
    Interrupted,

    /// No conversation has this id.
    #[error("no conversation with id {0}")]
    ConversationNotFound(ConversationId),

    /// The conversation's task has stopped.
    #[error("conversation {0} has shut down")]
    ConversationClosed(ConversationId),

    /// A rollout file could not be read or written.
    #[error("rollout file {path}: {message}")]
    Rollout {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// A filesystem or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl CoreError {
    /// Whether repeating the same model request may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Stream(_) | Self::StreamIdle(_) => true,
            Self::HttpStatus { status, .. } => *status == 429 || *status >= 500,
            Self::Config(_)
            | Self::MissingApiKey(_)
            | Self::ResponseFailed(_)
            | Self::Interrupted
            | Self::ConversationNotFound(_)
            | Self::ConversationClosed(_)
            | Self::Rollout { .. }
            | Self::Io { .. } => false,
        }
    }

    /// Whether the failure happened after the stream had started (retried with the stream budget).
    pub fn is_stream_failure(&self) -> bool {
        matches!(self, Self::Stream(_) | Self::StreamIdle(_))
    }

    /// The delay the provider asked for before retrying, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::HttpStatus { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// Result alias for keel-core.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
