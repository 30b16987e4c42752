//! Protocol invariants the mock checks on every request, as the real API would reject (or a
//! faithful client would never send) requests that break them.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::mock::capture::{CapturedRequest, tool_items};

/// A broken invariant, recorded by the mock; see [`crate::MockModelServer::verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Violation {
    /// The body was not JSON.
    InvalidJson {
        /// The request's index.
        request: usize,
        /// The parse error.
        error: String,
    },
    /// A model request did not ask for `stream: true`.
    NotStreaming {
        /// The request's index.
        request: usize,
    },
    /// A model request had no `model`.
    MissingModel {
        /// The request's index.
        request: usize,
    },
    /// A tool output named a call id the mock never emitted.
    UnknownCallId {
        /// The request's index.
        request: usize,
        /// The call id.
        call_id: String,
    },
    /// A tool output was sent without its call in the same input (the API rejects this).
    OutputWithoutCall {
        /// The request's index.
        request: usize,
        /// The call id.
        call_id: String,
    },
    /// A tool call was sent back without its output (the API rejects this).
    CallWithoutOutput {
        /// The request's index.
        request: usize,
        /// The call id.
        call_id: String,
    },
    /// A model request arrived after every scripted turn was used.
    ScriptExhausted {
        /// The request's index.
        request: usize,
        /// How many turns had been served.
        served: usize,
    },
    /// A request hit a path the mock does not serve.
    UnknownEndpoint {
        /// The request's index.
        request: usize,
        /// `METHOD /path`.
        route: String,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidJson { request, error } => {
                write!(f, "request #{request}: body is not JSON: {error}")
            }
            Self::NotStreaming { request } => {
                write!(f, "request #{request}: `stream` is not true")
            }
            Self::MissingModel { request } => write!(f, "request #{request}: no `model`"),
            Self::UnknownCallId { request, call_id } => write!(
                f,
                "request #{request}: tool output for call_id {call_id:?}, which the mock never emitted"
            ),
            Self::OutputWithoutCall { request, call_id } => write!(
                f,
                "request #{request}: tool output for call_id {call_id:?} without the call in the same input"
            ),
            Self::CallWithoutOutput { request, call_id } => write!(
                f,
                "request #{request}: tool call {call_id:?} sent back without its output"
            ),
            Self::ScriptExhausted { request, served } => write!(
                f,
                "request #{request}: script exhausted after {served} turn(s)"
            ),
            Self::UnknownEndpoint { request, route } => {
                write!(f, "request #{request}: no such endpoint: {route}")
            }
        }
    }
}

/// Checks a model request against the invariants; `emitted` holds every call id the mock has
/// sent so far.
pub(crate) fn check(request: &CapturedRequest, emitted: &HashSet<String>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let index = request.index;
    if request.body.get("stream").and_then(Value::as_bool) != Some(true) {
        violations.push(Violation::NotStreaming { request: index });
    }
    if request.body.get("model").and_then(Value::as_str).is_none() {
        violations.push(Violation::MissingModel { request: index });
    }
    let items = tool_items(request);
    // With `previous_response_id` the calls live server-side, so only the mock's record counts.
    let self_contained = request
        .body
        .get("previous_response_id")
        .is_none_or(Value::is_null);
    for (call_id, _) in &items.outputs {
        if !emitted.contains(call_id) {
            violations.push(Violation::UnknownCallId {
                request: index,
                call_id: call_id.clone(),
            });
        }
        if self_contained && !items.calls.contains(call_id) {
            violations.push(Violation::OutputWithoutCall {
                request: index,
                call_id: call_id.clone(),
            });
        }
    }
    for call_id in &items.calls {
        if !items.outputs.iter().any(|(id, _)| id == call_id) {
            violations.push(Violation::CallWithoutOutput {
                request: index,
                call_id: call_id.clone(),
            });
        }
    }
    violations
}
