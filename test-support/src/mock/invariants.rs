//! Protocol invariants the mock checks on every request, as the real API would reject (or a
//! faithful client would never send) requests that break them.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::mock::capture::{CapturedRequest, Endpoint};

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

/// The tool calls and outputs found in a request's conversation.
pub(crate) struct ToolItems<'a> {
    /// Call ids of the calls, in order.
    pub(crate) calls: Vec<String>,
    /// Call ids and output payloads of the outputs, in order.
    pub(crate) outputs: Vec<(String, &'a Value)>,
}

/// Collects the tool calls and outputs of `request`'s input (Responses items or Chat messages).
pub(crate) fn tool_items(request: &CapturedRequest) -> ToolItems<'_> {
    let mut items = ToolItems {
        calls: Vec::new(),
        outputs: Vec::new(),
    };
    let id = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    for entry in request.input() {
        match request.endpoint {
            Endpoint::ChatCompletions => {
                if let Some(calls) = entry.get("tool_calls").and_then(Value::as_array) {
                    items
                        .calls
                        .extend(calls.iter().filter_map(|call| id(call, "id")));
                }
                if entry.get("role").and_then(Value::as_str) == Some("tool")
                    && let Some(call_id) = id(entry, "tool_call_id")
                {
                    items
                        .outputs
                        .push((call_id, entry.get("content").unwrap_or(&Value::Null)));
                }
            }
            Endpoint::Responses
            | Endpoint::Models
            | Endpoint::OllamaShow
            | Endpoint::OllamaVersion
            | Endpoint::Unknown => {
                let kind = entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(call_id) = id(entry, "call_id") else {
                    continue;
                };
                match kind {
                    "function_call" | "custom_tool_call" | "local_shell_call" => {
                        items.calls.push(call_id);
                    }
                    "function_call_output" | "custom_tool_call_output" => items
                        .outputs
                        .push((call_id, entry.get("output").unwrap_or(&Value::Null))),
                    _ => {}
                }
            }
        }
    }
    items
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
