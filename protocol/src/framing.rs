//! What every Keel server does with one received line or frame, in one place: the line limit,
//! and the answer to input that is not a JSON-RPC message. All three servers (exec-server,
//! app-server, MCP) and their clients use it, so the same input gets the same error code
//! everywhere:
//!
//! | input | code |
//! | --- | --- |
//! | longer than the limit, not UTF-8, not JSON | `-32700` (parse error) |
//! | JSON that is not a request, notification or response (`[]`, `null`, `5`, `{}`, `"id": null` with a method) | `-32600` (invalid request) |
//! | a request for a method the server does not have | `-32601` |
//! | a known method with bad params | `-32602` |
//!
//! The connection stays open after each of these; the error names the problem in words, never
//! a Rust type.

use serde_json::Value;

use crate::jsonrpc::{
    INVALID_REQUEST, JsonRpcError, JsonRpcErrorObject, JsonRpcMessage, PARSE_ERROR, RequestId,
};

/// The longest line or frame any Keel server or client accepts by default (16 MiB): far above
/// any real message (a large `fs/writeFile` or command snapshot), far below what would hurt.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Why a line or frame is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The line was longer than the limit; it was skipped without being kept whole.
    TooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// The bytes are not UTF-8.
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        valid_up_to: usize,
    },
    /// The text is not JSON.
    NotJson {
        /// The JSON parser's description, with line and column.
        reason: String,
    },
    /// Valid JSON that is not a request, notification or response.
    NotAMessage {
        /// The request's id, when one could be read, so the error can be matched to it.
        id: Option<RequestId>,
        /// What is wrong, in words.
        reason: String,
    },
}

impl FrameError {
    /// The JSON-RPC error code for this input (see the module table).
    pub fn code(&self) -> i64 {
        match self {
            Self::TooLong { .. } | Self::NotUtf8 { .. } | Self::NotJson { .. } => PARSE_ERROR,
            Self::NotAMessage { .. } => INVALID_REQUEST,
        }
    }

    /// The error response a server sends for this input.
    pub fn to_response(&self) -> JsonRpcError {
        let id = match self {
            Self::NotAMessage { id, .. } => id.clone(),
            Self::TooLong { .. } | Self::NotUtf8 { .. } | Self::NotJson { .. } => None,
        };
        JsonRpcError {
            id,
            error: JsonRpcErrorObject::new(self.code(), self.to_string()),
        }
    }
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLong { limit } => write!(f, "message longer than {limit} bytes; skipped"),
            Self::NotUtf8 { valid_up_to } => {
                write!(f, "message is not valid UTF-8 (at byte {valid_up_to})")
            }
            Self::NotJson { reason } => write!(f, "message is not JSON: {reason}"),
            Self::NotAMessage { reason, .. } => write!(f, "not a JSON-RPC message: {reason}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Decodes one line (without its newline) or frame: `Ok(None)` for a blank line, else the
/// message or why it is not one.
pub fn decode_frame(bytes: &[u8]) -> Result<Option<JsonRpcMessage>, FrameError> {
    let text = std::str::from_utf8(bytes).map_err(|err| FrameError::NotUtf8 {
        valid_up_to: err.valid_up_to(),
    })?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|err| FrameError::NotJson {
        reason: err.to_string(),
    })?;
    message_from_value(value).map(Some)
}

/// Classifies a parsed JSON value as a JSON-RPC message, with a plain-words reason if it is
/// not one.
pub fn message_from_value(value: Value) -> Result<JsonRpcMessage, FrameError> {
    let not_a_message =
        |id: Option<RequestId>, reason: String| FrameError::NotAMessage { id, reason };
    let Value::Object(object) = &value else {
        return Err(not_a_message(
            None,
            format!("expected an object, got {}", kind_of(&value)),
        ));
    };
    let id = match object.get("id") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(raw) => match serde_json::from_value::<RequestId>(raw.clone()) {
            Ok(id) => Some(Some(id)),
            Err(_) => {
                return Err(not_a_message(
                    None,
                    format!("`id` must be a string or an integer, got {}", kind_of(raw)),
                ));
            }
        },
    };
    let readable_id = id.clone().flatten();
    if let Some(method) = object.get("method") {
        if !method.is_string() {
            return Err(not_a_message(
                readable_id,
                format!("`method` must be a string, got {}", kind_of(method)),
            ));
        }
        if id == Some(None) {
            return Err(not_a_message(
                None,
                "`id` is null: a request needs a string or integer id, a notification none"
                    .to_string(),
            ));
        }
        if let Some(params) = object.get("params")
            && !(params.is_object() || params.is_array() || params.is_null())
        {
            return Err(not_a_message(
                readable_id,
                format!(
                    "`params` must be an object or an array, got {}",
                    kind_of(params)
                ),
            ));
        }
    } else if object.contains_key("result") {
        if readable_id.is_none() {
            return Err(not_a_message(
                None,
                "a response needs a string or integer `id`".to_string(),
            ));
        }
    } else if let Some(error) = object.get("error") {
        let well_formed = error.get("code").is_some_and(Value::is_i64)
            && error.get("message").is_some_and(Value::is_string);
        if !well_formed {
            return Err(not_a_message(
                readable_id,
                "`error` must be an object with an integer `code` and a string `message`"
                    .to_string(),
            ));
        }
    } else {
        return Err(not_a_message(
            readable_id,
            "no `method`, `result` or `error` member".to_string(),
        ));
    }
    serde_json::from_value(value).map_err(|err| FrameError::NotAMessage {
        id: None,
        reason: err.to_string(),
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::jsonrpc::{JsonRpcNotification, JsonRpcRequest};

    fn error_of(line: &str) -> (i64, Option<RequestId>, String) {
        match decode_frame(line.as_bytes()) {
            Err(err) => {
                let response = err.to_response();
                (response.error.code, response.id, response.error.message)
            }
            Ok(message) => panic!("{line} decoded as {message:?}"),
        }
    }

    #[test]
    fn messages_decode_and_blank_lines_are_skipped() {
        assert_eq!(decode_frame(b"  \r"), Ok(None));
        assert_eq!(
            decode_frame(br#"{"id":1,"method":"ping"}"#),
            Ok(Some(JsonRpcMessage::Request(JsonRpcRequest {
                id: RequestId::Integer(1),
                method: "ping".into(),
                params: None,
                trace: None,
            })))
        );
        assert_eq!(
            decode_frame(br#"{"jsonrpc":"2.0","method":"initialized"}"#),
            Ok(Some(JsonRpcMessage::Notification(JsonRpcNotification {
                method: "initialized".into(),
                params: None,
            })))
        );
        assert!(matches!(
            decode_frame(br#"{"id":null,"error":{"code":-1,"message":"x"}}"#),
            Ok(Some(JsonRpcMessage::Error(_)))
        ));
    }

    #[test]
    fn each_kind_of_bad_input_gets_its_code_and_a_plain_reason() {
        assert_eq!(
            decode_frame(b"{\"id\":1,\xff}").map_err(|e| e.code()),
            Err(PARSE_ERROR)
        );
        assert_eq!(error_of("{nope").0, PARSE_ERROR);
        for (line, reason) in [
            ("[]", "expected an object, got an array"),
            ("null", "expected an object, got null"),
            ("5", "expected an object, got a number"),
            ("{}", "no `method`, `result` or `error` member"),
            (
                r#"{"id":[1],"method":"x"}"#,
                "`id` must be a string or an integer, got an array",
            ),
        ] {
            assert_eq!(
                error_of(line),
                (
                    INVALID_REQUEST,
                    None,
                    format!("not a JSON-RPC message: {reason}")
                ),
                "{line}"
            );
        }
        assert_eq!(
            error_of(r#"{"id":null,"method":"thread/list"}"#).0,
            INVALID_REQUEST
        );
        assert_eq!(
            error_of(r#"{"id":"a","method":7}"#),
            (
                INVALID_REQUEST,
                Some(RequestId::String("a".into())),
                "not a JSON-RPC message: `method` must be a string, got a number".into()
            )
        );
        assert_eq!(
            error_of(r#"{"id":3,"method":"x","params":5}"#).1,
            Some(RequestId::Integer(3))
        );
    }
}
