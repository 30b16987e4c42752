//! The engine's error type. Each variant carries what a user needs to act on it.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::ConversationId;

/// Everything that can go wrong inside keel-core.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// Configuration could not be loaded or is invalid.
    #[error(transparent)]
    Config(#[from] crate::config_error::ConfigError),

    /// The provider needs an API key that is not set.
    #[error("{0}")]
    MissingApiKey(String),

    /// The model provider could not be reached.
    #[error("could not reach the model provider at {url}: {cause}")]
    Connect {
        /// The request URL.
        url: String,
        /// The transport error's cause chain (`tcp connect error: Connection refused`, a DNS
        /// or TLS failure), flattened so every printer shows it once.
        cause: String,
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
    #[error("model response failed: {message}")]
    ResponseFailed {
        /// The provider's error code (`server_error`, `context_length_exceeded`, ...), if any.
        code: Option<String>,
        /// The provider's message.
        message: String,
    },

    /// The turn was interrupted.
    #[error("turn interrupted")]
    Interrupted,

    /// Summarising the history failed; the history is unchanged.
    #[error("compaction failed: {0}")]
    Compaction(String),

    /// The request did not fit the model's context window, even after compacting the history.
    #[error(
        "the conversation does not fit the model's context window, even after compacting it: \
         {0}"
    )]
    ContextWindowExceeded(String),

    /// An MCP server marked `required` could not start, so no turn runs without it.
    #[error("required MCP servers failed to start: {0}")]
    McpRequired(String),

    /// A tool given to the conversation cannot be offered (bad or clashing name).
    #[error("cannot offer the tool: {0}")]
    InvalidTool(#[from] ToolRegistrationError),

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

    /// The shared thread store (named without its password) could not be reached, read or
    /// written.
    #[error("the thread store {store} failed: {message}")]
    ThreadStore {
        /// The store, as `postgres://user@host:port/db`.
        store: String,
        /// What went wrong.
        message: String,
    },

    /// Another server is running a turn on the thread; it can be resumed here once that turn
    /// ends or that server's lease lapses.
    #[error(
        "thread {id} is running a turn on server `{holder}`; retry in about {retry_after_secs}s, \
         when that turn has ended or its lease has lapsed"
    )]
    ThreadHeld {
        /// The thread.
        id: ConversationId,
        /// The server holding it (its `--server-name`).
        holder: String,
        /// Seconds until its lease lapses unless renewed.
        retry_after_secs: u64,
    },

    /// The thread was opened by another server since this one opened it: this server may no
    /// longer record it.
    #[error(
        "thread {0} was taken over by another server; this server no longer records it \
         (resume the thread to continue it)"
    )]
    LeaseLost(ConversationId),

    /// The conversation could no longer be recorded, so its turn was stopped.
    #[error("the conversation can no longer be recorded ({0}); the turn was stopped")]
    RecordingFailed(String),

    /// A tool could not go on, nor could the turn (state it depends on, such as the
    /// agent-job database, could no longer be written), so the turn was stopped.
    #[error("{0}; the turn was stopped")]
    ToolFatal(String),

    /// A review could not start (its target does not exist, say).
    #[error("cannot review: {0}")]
    Review(#[from] crate::review::ReviewError),

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
    /// The HTTP status the provider answered with, for an error status.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::HttpStatus { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether repeating the same model request may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Stream(_) | Self::StreamIdle(_) => true,
            Self::ResponseFailed { code, .. } => {
                code.as_deref().is_some_and(is_transient_failure_code)
            }
            Self::HttpStatus { status, body, .. } => {
                (*status == 429 && !body_error_code(body).is_some_and(|code| is_quota_code(&code)))
                    || *status >= 500
            }
            Self::Config(_)
            | Self::MissingApiKey(_)
            | Self::Interrupted
            | Self::Compaction(_)
            | Self::ContextWindowExceeded(_)
            | Self::McpRequired(_)
            | Self::InvalidTool(_)
            | Self::RecordingFailed(_)
            | Self::ToolFatal(_)
            | Self::ConversationNotFound(_)
            | Self::ConversationClosed(_)
            | Self::Rollout { .. }
            | Self::ThreadStore { .. }
            | Self::ThreadHeld { .. }
            | Self::LeaseLost(_)
            | Self::Review(_)
            | Self::Io { .. } => false,
        }
    }

    /// Whether the provider rejected the request as too long for the model's context window
    /// (`context_length_exceeded`, in a Responses failure or an HTTP 400 body, as the Responses
    /// and Chat APIs report it).
    pub fn is_context_overflow(&self) -> bool {
        const CODE: &str = "context_length_exceeded";
        match self {
            Self::ResponseFailed { code, message } => {
                code.as_deref() == Some(CODE) || message.contains(CODE)
            }
            Self::HttpStatus { status, body, .. } => {
                *status == 400 && (body.contains(CODE) || body.contains("maximum context length"))
            }
            _ => false,
        }
    }

    /// Whether the failure happened after the stream had started (retried with the stream budget).
    pub fn is_stream_failure(&self) -> bool {
        matches!(
            self,
            Self::Stream(_) | Self::StreamIdle(_) | Self::ResponseFailed { .. }
        )
    }

    /// The delay the provider asked for before retrying, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::HttpStatus { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A [`CoreError::Connect`] for `url` whose cause is `error`'s whole source chain.
    pub(crate) fn connect(url: &str, error: &reqwest::Error) -> Self {
        Self::Connect {
            url: url.to_string(),
            cause: transport_cause(error),
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

/// The causes of a transport error, outermost first and joined by `: `. reqwest's own
/// message ("error sending request for url (...)") only repeats the URL, and hyper's
/// "client error (Connect)" wrapper says nothing, so both give way to what they wrap.
fn transport_cause(error: &reqwest::Error) -> String {
    let mut causes: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(current) = source {
        let text = current.to_string();
        if !text.starts_with("client error (") && !causes.contains(&text) {
            causes.push(text);
        }
        source = current.source();
    }
    if causes.is_empty() {
        let kind = if error.is_timeout() {
            "timed out"
        } else if error.is_connect() {
            "connection failed"
        } else {
            "request failed"
        };
        causes.push(kind.to_string());
    }
    causes.join(": ")
}

/// The provider's `error.code` (else `error.type`) in an OpenAI-style body.
pub(crate) fn body_error_code(body: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = json.get("error")?;
    error
        .get("code")
        .and_then(serde_json::Value::as_str)
        .or_else(|| error.get("type").and_then(serde_json::Value::as_str))
        .map(str::to_string)
}

/// Codes that come with a 429 but that waiting does not cure: the account's quota or
/// billing, not the request rate.
pub(crate) fn is_quota_code(code: &str) -> bool {
    matches!(
        code,
        "insufficient_quota" | "billing_hard_limit_reached" | "usage_not_included"
    )
}

/// Error codes of a failed response that a new attempt may not meet (the provider was busy or
/// broke down), as opposed to ones it would meet again (`context_length_exceeded`,
/// `insufficient_quota`, `invalid_prompt`, ...).
fn is_transient_failure_code(code: &str) -> bool {
    matches!(
        code,
        "server_error"
            | "rate_limit_exceeded"
            | "server_is_overloaded"
            | "slow_down"
            | "overloaded"
    )
}

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistrationError {
    /// Another tool already has the name.
    #[error("a tool named `{0}` is already registered")]
    Duplicate(String),
    /// The definition offered to the model names another tool than the one registered, so
    /// the model's calls would find no handler.
    #[error("the tool `{name}` offers a definition named `{offered}`")]
    SpecNameMismatch {
        /// The name the tool is registered under.
        name: String,
        /// The name in its definition.
        offered: String,
    },
    /// The name is not one the model APIs accept.
    #[error("invalid tool name `{0}`: use 1 to 64 of the characters A-Z a-z 0-9 _ -")]
    InvalidName(String),
}
