//! What kind of failure ended a turn, for clients that react to it (offer a new thread when the
//! context is full, a login when the key was refused): Codex 0.169's `codexErrorInfo`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kind of a turn's failure; unit kinds are strings on the wire, the others objects
/// (`{"httpConnectionFailed": {"httpStatusCode": 502}}`), as in Codex 0.169.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum CodexErrorInfo {
    /// The conversation no longer fits the model's context window.
    ContextWindowExceeded,
    /// The account's quota or plan is used up.
    UsageLimitExceeded,
    /// Too many requests, still after the retries.
    RateLimitExceeded,
    /// The provider is overloaded.
    ServerOverloaded,
    /// The provider has no such model.
    ModelNotFound,
    /// The provider failed (HTTP 5xx).
    InternalServerError,
    /// The provider refused the credentials.
    Unauthorized,
    /// The provider refused the request as malformed.
    BadRequest,
    /// The sandbox could not run a command.
    SandboxError,
    /// The provider's safety policy refused the request as a cybersecurity risk (Codex 0.171).
    CyberPolicy,
    /// The provider's safety policy refused the request as a biological risk (Codex 0.171).
    BioPolicy,
    /// The provider could not be reached.
    #[serde(rename_all = "camelCase")]
    HttpConnectionFailed {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// The response stream broke off before it completed.
    #[serde(rename_all = "camelCase")]
    ResponseStreamDisconnected {
        /// The HTTP status, when there was one.
        http_status_code: Option<u16>,
    },
    /// Something else.
    Other,
}
