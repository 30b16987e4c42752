//! Transports: each turns a byte stream into [`Incoming`] messages for a connection and
//! writes its outgoing messages, one JSON object per line (stdio) or text frame (websocket).

mod handshake_guard;
mod stdio;
mod websocket;

pub(crate) use stdio::serve_stdio;
pub(crate) use websocket::{serve_unix_socket, serve_websocket};

use keel_protocol::app_server::{ServerNotification, WarningNotification};
use keel_protocol::{JsonRpcMessage, MethodTable};

use crate::connection::Incoming;
use crate::delivery::{Delivered, DeliveryQueue, SharedMessage};

/// Lines or frames read ahead of the connection (parsing is cheap; the request queue behind
/// it is what bounds work).
pub(crate) const INCOMING_CAPACITY: usize = 128;

/// Parses one websocket frame (a line has been cut and classified by the codec already).
pub(crate) fn parse(bytes: &[u8]) -> Option<Incoming> {
    match keel_protocol::decode_frame(bytes) {
        Ok(message) => message.map(Incoming::Message),
        Err(err) => Some(Incoming::Malformed(err)),
    }
}

/// The next message for a remote client's writer: queued messages in order, and a `warning`
/// notification saying how many deltas were dropped when the client fell behind.
pub(crate) async fn next_for_client(queue: &DeliveryQueue) -> Option<SharedMessage> {
    loop {
        if let Some(message) = next_delivery(queue).await? {
            return Some(message);
        }
    }
}

/// One delivery as a message; `Some(None)` when the warning could not be encoded.
async fn next_delivery(queue: &DeliveryQueue) -> Option<Option<SharedMessage>> {
    Some(match queue.next().await? {
        Delivered::Message(message) => Some(message),
        Delivered::Missed(count) => {
            let warning = ServerNotification::Warning(WarningNotification {
                message: format!(
                    "{count} streaming notifications were dropped because this client read \
                     too slowly; item/completed carries their content"
                ),
                thread_id: None,
            });
            match warning.into_method_and_params() {
                Ok((method, params)) => Some(SharedMessage::new(JsonRpcMessage::Notification(
                    keel_protocol::JsonRpcNotification {
                        method: method.to_string(),
                        params: Some(params),
                    },
                ))),
                Err(err) => {
                    tracing::error!("cannot encode the dropped-deltas warning: {err}");
                    None
                }
            }
        }
    })
}
