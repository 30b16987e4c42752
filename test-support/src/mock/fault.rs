//! Faults: the ways a scripted turn can misbehave on purpose.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A fault injected into one scripted turn. "Events" count SSE frames as they are sent, so
/// `after_events: 0` acts right after the response headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Answer with this HTTP status and body instead of a stream.
    HttpStatus {
        /// The status code, e.g. 429, 500 or 401.
        status: u16,
        /// The response body; an OpenAI-style JSON error naming the status when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// The `Retry-After` header value, in seconds, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
    },
    /// Drop the connection abruptly (no terminating chunk) after this many events.
    Disconnect {
        /// Events sent before the connection is dropped.
        after_events: usize,
    },
    /// Stop sending for `duration` after this many events, then carry on.
    Stall {
        /// Events sent before the stall.
        after_events: usize,
        /// How long the stream goes quiet.
        #[serde(rename = "duration_ms", with = "crate::mock::duration_ms")]
        duration: Duration,
    },
    /// Send one frame whose `data:` is not valid JSON after this many events, then carry on.
    MalformedData {
        /// Events sent before the malformed frame.
        after_events: usize,
    },
    /// End the stream cleanly but leave out the terminal `response.completed` (Responses) or
    /// `data: [DONE]` (Chat Completions).
    EndWithoutCompleted,
    /// End with `response.failed` carrying this error instead of `response.completed` (Chat
    /// Completions: a `data: {"error": ..}` chunk and no `[DONE]`).
    ResponseFailed {
        /// The error code, e.g. `server_error`, `rate_limit_exceeded`.
        code: String,
        /// The error message.
        message: String,
    },
}

impl Fault {
    /// An HTTP error with the default JSON body.
    pub fn http(status: u16) -> Self {
        Self::HttpStatus {
            status,
            body: None,
            retry_after: None,
        }
    }

    /// An HTTP 429 with a `Retry-After` of `seconds`.
    pub fn rate_limited(seconds: u64) -> Self {
        Self::HttpStatus {
            status: 429,
            body: None,
            retry_after: Some(seconds.to_string()),
        }
    }

    /// An HTTP error with a custom body.
    pub fn http_with_body(status: u16, body: impl Into<String>) -> Self {
        Self::HttpStatus {
            status,
            body: Some(body.into()),
            retry_after: None,
        }
    }

    /// Drop the connection after `events` events.
    pub fn disconnect_after(events: usize) -> Self {
        Self::Disconnect {
            after_events: events,
        }
    }

    /// Go quiet for `duration` after `events` events.
    pub fn stall_after(events: usize, duration: Duration) -> Self {
        Self::Stall {
            after_events: events,
            duration,
        }
    }

    /// Send malformed `data:` after `events` events.
    pub fn malformed_after(events: usize) -> Self {
        Self::MalformedData {
            after_events: events,
        }
    }

    /// End with `response.failed`.
    pub fn response_failed(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::ResponseFailed {
            code: code.into(),
            message: message.into(),
        }
    }
}
