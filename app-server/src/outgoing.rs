//! One connection's outgoing side: responses, notifications (minus opted-out methods), and
//! server → client requests with a waiter per pending id. Everything goes into the
//! connection's [`DeliveryQueue`], so sending never waits for the client: a client too slow
//! for the contract in `delivery` is disconnected instead.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use keel_protocol::app_server::{ServerNotification, ServerRequest};
use keel_protocol::{
    JsonRpcError, JsonRpcErrorObject, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest,
    JsonRpcResponse, MethodTable, RequestId,
};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::delivery::{DeliveryQueue, Refused, SharedMessage};

/// Identifies a connection within the server.
pub(crate) type ConnectionId = u64;

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// The answer to a server request.
pub(crate) type ClientAnswer = Result<Value, JsonRpcErrorObject>;

/// Sends to one client. Cheap to share behind an `Arc`.
pub(crate) struct Outgoing {
    id: ConnectionId,
    queue: std::sync::Arc<DeliveryQueue>,
    /// Cancelled when the client fell too far behind; the connection then closes.
    disconnected: CancellationToken,
    next_request_id: AtomicI64,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<ClientAnswer>>>,
    opted_out: Mutex<HashSet<String>>,
    /// The queue whose room paces the engine's events for this consumer (a lossless one).
    pace: Option<std::sync::Arc<DeliveryQueue>>,
}

impl Outgoing {
    /// An outgoing side writing into `queue` (the connection's writer drains it).
    pub(crate) fn new(queue: std::sync::Arc<DeliveryQueue>) -> Self {
        Self {
            id: NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed),
            queue,
            disconnected: CancellationToken::new(),
            next_request_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
            opted_out: Mutex::new(HashSet::new()),
            pace: None,
        }
    }

    /// An outgoing side whose engine events wait for room in `pace` (the consumer's lossless
    /// queue) instead of being dropped for a slow consumer.
    pub(crate) fn paced(
        queue: std::sync::Arc<DeliveryQueue>,
        pace: std::sync::Arc<DeliveryQueue>,
    ) -> Self {
        Self {
            pace: Some(pace),
            ..Self::new(queue)
        }
    }

    /// Resolves when this consumer can take more engine events (at once unless paced).
    pub(crate) async fn wait_for_room(&self) {
        if let Some(pace) = &self.pace {
            pace.wait_for_room().await;
        }
    }

    pub(crate) fn id(&self) -> ConnectionId {
        self.id
    }

    pub(crate) fn set_opted_out(&self, methods: impl IntoIterator<Item = String>) {
        let mut opted = self
            .opted_out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        opted.extend(methods);
    }

    /// Resolves when the client fell too far behind and must be disconnected.
    pub(crate) async fn disconnected(&self) {
        self.disconnected.cancelled().await;
    }

    /// Closes the queue once the connection ends: the writer delivers what is queued, then
    /// stops.
    pub(crate) fn close(&self) {
        self.queue.close();
    }

    /// Queues a message without waiting. `false` once the connection is gone (or has just
    /// been given up on for falling behind).
    pub(crate) async fn send(&self, message: impl Into<SharedMessage>) -> bool {
        match self.queue.push(message) {
            Ok(()) => true,
            Err(Refused::Closed) => false,
            Err(Refused::Overflow) => {
                tracing::warn!(
                    connection = self.id,
                    "disconnecting a client that stopped reading: {} messages that must \
                     arrive are waiting for it",
                    crate::delivery::DELIVERY_CAPACITY
                );
                self.disconnected.cancel();
                false
            }
        }
    }

    pub(crate) async fn respond(&self, id: RequestId, result: Result<Value, JsonRpcErrorObject>) {
        let message = match result {
            Ok(result) => JsonRpcMessage::Response(JsonRpcResponse { id, result }),
            Err(error) => JsonRpcMessage::Error(JsonRpcError {
                id: Some(id),
                error,
            }),
        };
        if !self.send(message).await {
            tracing::debug!(connection = self.id, "response dropped: connection closed");
        }
    }

    /// Answers a request with a result that is JSON text already.
    pub(crate) async fn respond_raw(
        &self,
        id: RequestId,
        result: Box<serde_json::value::RawValue>,
    ) {
        if !self.send(SharedMessage::raw_response(id, result)).await {
            tracing::debug!(connection = self.id, "response dropped: connection closed");
        }
    }

    /// Sends a notification unless the client opted out of its method.
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        if let Some((method, message)) = Self::notification_message(notification) {
            self.notify_shared(method, &message).await;
        }
    }

    /// A notification as one queueable message, to send to many connections without
    /// encoding it for each; `None` (logged) if it cannot be encoded.
    pub(crate) fn notification_message(
        notification: ServerNotification,
    ) -> Option<(&'static str, SharedMessage)> {
        let method = notification.method();
        match notification.into_method_and_params() {
            Ok((_, params)) => Some((
                method,
                SharedMessage::new(JsonRpcMessage::Notification(JsonRpcNotification {
                    method: method.to_string(),
                    params: Some(params),
                })),
            )),
            Err(err) => {
                tracing::error!("cannot serialise `{method}` notification: {err}");
                None
            }
        }
    }

    /// Sends a prepared notification of `method` unless the client opted out of it.
    pub(crate) async fn notify_shared(&self, method: &str, message: &SharedMessage) {
        let opted_out = self
            .opted_out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(method);
        if opted_out {
            return;
        }
        if !self.send(message.clone()).await {
            tracing::debug!(
                connection = self.id,
                "notification dropped: connection closed"
            );
        }
    }

    /// Sends a server request; the receiver yields the client's answer.
    pub(crate) async fn request(
        &self,
        request: ServerRequest,
    ) -> Option<(RequestId, oneshot::Receiver<ClientAnswer>)> {
        let id = RequestId::Integer(self.next_request_id.fetch_add(1, Ordering::Relaxed));
        let (method, params) = match request.into_method_and_params() {
            Ok(parts) => parts,
            Err(err) => {
                tracing::error!("cannot serialise a server request: {err}");
                return None;
            }
        };
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id.clone(), tx);
        let message = JsonRpcMessage::Request(JsonRpcRequest {
            id: id.clone(),
            method: method.to_string(),
            params: Some(params),
            trace: None,
        });
        if self.send(message).await {
            Some((id, rx))
        } else {
            self.forget(&id);
            None
        }
    }

    /// Routes a client's response to the waiting request; unknown ids are logged.
    pub(crate) fn answer(&self, id: &RequestId, answer: ClientAnswer) {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
        match waiter {
            Some(tx) => {
                if tx.send(answer).is_err() {
                    tracing::debug!(%id, "answer arrived after the request was settled");
                }
            }
            None => tracing::warn!(%id, "response to an unknown server request"),
        }
    }

    pub(crate) fn forget(&self, id: &RequestId) {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
    }
}
