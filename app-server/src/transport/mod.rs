//! Transports: each turns a byte stream into [`Incoming`] messages for a connection and
//! writes its outgoing messages, one JSON object per line (stdio) or text frame (websocket).

mod stdio;
mod websocket;

pub(crate) use stdio::serve_stdio;
pub(crate) use websocket::serve_websocket;

use keel_protocol::JsonRpcMessage;

use crate::connection::Incoming;

/// Lines or frames read ahead of the connection (parsing is cheap; the request queue behind
/// it is what bounds work).
pub(crate) const INCOMING_CAPACITY: usize = 128;

/// Parses one line or frame.
pub(crate) fn parse(text: &str) -> Incoming {
    match JsonRpcMessage::from_json(text) {
        Ok(message) => Incoming::Message(message),
        Err(err) => Incoming::Malformed(err.to_string()),
    }
}
