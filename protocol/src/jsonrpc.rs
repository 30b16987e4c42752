//! The JSON-RPC 2.0 envelope shared by every Keel server.
//!
//! MCP requires the `"jsonrpc": "2.0"` member; the app-server and exec-server omit it. Messages
//! here carry no version field: [`JsonRpcMessage::to_json`] adds it when asked, and parsing
//! accepts it present or absent (but rejects any version other than `2.0`).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The only JSON-RPC version Keel speaks.
pub const JSONRPC_VERSION: &str = "2.0";

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object, or the request is not allowed now.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The server is saturated and the client should retry later.
pub const SERVER_OVERLOADED: i64 = -32001;

/// A request id: JSON-RPC allows integers and strings, and clients use both.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id, as most clients send.
    Integer(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Integer(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        Self::Integer(value)
    }
}

impl From<String> for RequestId {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

impl From<&str> for RequestId {
    fn from(value: &str) -> Self {
        Self::String(value.to_string())
    }
}

/// A call that expects exactly one response with the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcRequest {
    /// Correlates the response with this request.
    pub id: RequestId,
    /// The method name, e.g. `command/exec`.
    pub method: String,
    /// Method parameters; absent means none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// The caller's span (W3C Trace Context), as Codex 0.171's clients may send it; absent
    /// means none, and it is left out when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<W3cTraceContext>,
}

/// A W3C Trace Context (`traceparent`, `tracestate`), carried with a request so a server's
/// spans continue the caller's trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct W3cTraceContext {
    /// `00-<trace id>-<span id>-<flags>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Vendor-specific trace state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
}

/// A one-way message: no response is sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcNotification {
    /// The notification name, e.g. `command/exec/exited`.
    pub method: String,
    /// Notification parameters; absent means none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// The successful answer to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcResponse {
    /// The id of the request being answered.
    pub id: RequestId,
    /// The method's result.
    pub result: Value,
}

/// The error payload of a failed request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcErrorObject {
    /// One of the error code constants in this module, or a server-defined code.
    pub code: i64,
    /// A human-readable message that names the problem.
    pub message: String,
    /// Extra structured detail, when useful.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcErrorObject {
    /// An error with a code and message and no extra data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// The most characters of a client's own text (a method name, a value) an error message
/// repeats back: enough to recognise it, never a megabyte.
pub const ECHO_LIMIT: usize = 96;

/// `text` as an error message may quote it: whole when short, else its first
/// [`ECHO_LIMIT`] characters and how long it was.
pub fn echo_bounded(text: &str) -> String {
    match text.char_indices().nth(ECHO_LIMIT) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

impl fmt::Display for JsonRpcErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for JsonRpcErrorObject {}

/// The failed answer to a request. The id is `null` when the request could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcError {
    /// The id of the request being answered, or `None` when it was unreadable.
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: JsonRpcErrorObject,
}

/// Any JSON-RPC message, for transports that read a line or frame before knowing its kind.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum JsonRpcMessage {
    /// A request (has `id` and `method`).
    Request(JsonRpcRequest),
    /// A notification (has `method`, no `id`).
    Notification(JsonRpcNotification),
    /// A successful response (has `id` and `result`).
    Response(JsonRpcResponse),
    /// An error response (has `error`).
    Error(JsonRpcError),
}

/// Whether an encoded message carries the `"jsonrpc": "2.0"` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonRpcFraming {
    /// Include `"jsonrpc": "2.0"` (MCP).
    WithVersion,
    /// Omit it (app-server, exec-server).
    WithoutVersion,
}

impl JsonRpcMessage {
    /// Encodes the message as one line of JSON (no trailing newline).
    pub fn to_json(&self, framing: JsonRpcFraming) -> serde_json::Result<String> {
        match framing {
            JsonRpcFraming::WithoutVersion => serde_json::to_string(self),
            JsonRpcFraming::WithVersion => {
                let mut value = serde_json::to_value(self)?;
                if let Value::Object(map) = &mut value {
                    map.insert(
                        "jsonrpc".to_string(),
                        Value::String(JSONRPC_VERSION.to_string()),
                    );
                }
                serde_json::to_string(&value)
            }
        }
    }

    /// Parses one line or frame; the error names what is wrong with the message.
    pub fn from_json(text: &str) -> serde_json::Result<Self> {
        serde_json::from_str(text)
    }
}

impl From<JsonRpcRequest> for JsonRpcMessage {
    fn from(value: JsonRpcRequest) -> Self {
        Self::Request(value)
    }
}

impl From<JsonRpcNotification> for JsonRpcMessage {
    fn from(value: JsonRpcNotification) -> Self {
        Self::Notification(value)
    }
}

impl From<JsonRpcResponse> for JsonRpcMessage {
    fn from(value: JsonRpcResponse) -> Self {
        Self::Response(value)
    }
}

impl From<JsonRpcError> for JsonRpcMessage {
    fn from(value: JsonRpcError) -> Self {
        Self::Error(value)
    }
}

/// The union of every member a JSON-RPC message may carry, classified after parsing so that a
/// bad message gets an error naming the problem rather than "did not match any variant".
#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    error: Option<JsonRpcErrorObject>,
    /// Only taken from requests; a trace context that is not an object is ignored.
    #[serde(default, deserialize_with = "lenient_trace")]
    trace: Option<W3cTraceContext>,
}

/// A `trace` of the wrong shape is dropped rather than failing the whole message.
fn lenient_trace<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<W3cTraceContext>, D::Error> {
    Ok(Option::<W3cTraceContext>::deserialize(Value::deserialize(deserializer)?).unwrap_or(None))
}

/// Keeps `"result": null` distinct from a missing `result`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl TryFrom<RawMessage> for JsonRpcMessage {
    type Error = String;

    fn try_from(raw: RawMessage) -> Result<Self, String> {
        if let Some(version) = &raw.jsonrpc
            && version != JSONRPC_VERSION
        {
            return Err(format!(
                "unsupported jsonrpc version `{version}`, expected `2.0`"
            ));
        }
        let params = match raw.params {
            Some(Value::Null) => None,
            other => other,
        };
        match (raw.method, raw.result, raw.error) {
            (Some(method), None, None) => Ok(match raw.id {
                Some(id) => Self::Request(JsonRpcRequest {
                    id,
                    method,
                    params,
                    trace: raw.trace,
                }),
                None => Self::Notification(JsonRpcNotification { method, params }),
            }),
            (None, Some(result), None) => match raw.id {
                Some(id) => Ok(Self::Response(JsonRpcResponse { id, result })),
                None => Err("response is missing field `id`".to_string()),
            },
            (None, None, Some(error)) => Ok(Self::Error(JsonRpcError { id: raw.id, error })),
            (None, None, None) => Err(
                "message has none of `method`, `result` or `error`; it is not JSON-RPC".to_string(),
            ),
            (Some(_), _, _) => {
                Err("message has `method` together with `result` or `error`".to_string())
            }
            (None, Some(_), Some(_)) => Err("message has both `result` and `error`".to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for JsonRpcMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawMessage::deserialize(deserializer)?;
        Self::try_from(raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod echo_tests {
    use super::*;

    #[test]
    fn long_text_is_cut_and_measured() {
        assert_eq!(echo_bounded("command/nope"), "command/nope");
        let long = "é".repeat(1000);
        assert_eq!(
            echo_bounded(&long),
            format!("{}… (2000 bytes)", "é".repeat(ECHO_LIMIT))
        );
    }
}
