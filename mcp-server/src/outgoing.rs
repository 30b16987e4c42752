//! The outgoing half of the connection, shared by every task: responses, notifications and
//! server→client requests all go through one bounded channel to the writer task.
//!
//! Server→client requests get ids from a counter; each pending request keeps a one-shot
//! callback that the processor completes when the client's response (or error) arrives.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use keel_protocol::{
    INTERNAL_ERROR, JsonRpcError, JsonRpcErrorObject, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, RequestId, RpcNotification, RpcRequest,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Messages queued for the writer. When full, senders wait: a slow client slows the event
/// forwarding, which backs up into the engine's bounded event channel and pauses the turn.
/// Nothing is dropped. 1024 covers a burst of output deltas without stalling a turn.
pub(crate) const OUTGOING_CAPACITY: usize = 1024;

/// The client's answer to a server→client request: its `result`, or its `error`.
pub(crate) type ClientReply = Result<Value, JsonRpcErrorObject>;

/// Sends messages to the client; cheap to clone.
#[derive(Clone)]
pub(crate) struct OutgoingSender {
    inner: Arc<Inner>,
}

struct Inner {
    tx: mpsc::Sender<JsonRpcMessage>,
    next_request_id: AtomicI64,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<ClientReply>>>,
}

impl OutgoingSender {
    /// A sender feeding the writer task through `tx`.
    pub(crate) fn new(tx: mpsc::Sender<JsonRpcMessage>) -> Self {
        Self {
            inner: Arc::new(Inner {
                tx,
                next_request_id: AtomicI64::new(0),
                pending: Mutex::new(HashMap::new()),
            }),
        }
    }

    async fn send(&self, message: JsonRpcMessage) {
        if self.inner.tx.send(message).await.is_err() {
            tracing::debug!("the writer has stopped; dropping an outgoing message");
        }
    }

    /// Answers request `id` with `result`; a result that cannot be serialised becomes an
    /// internal error response.
    pub(crate) async fn send_response<T: Serialize>(&self, id: RequestId, result: &T) {
        match serde_json::to_value(result) {
            Ok(result) => {
                self.send(JsonRpcResponse { id, result }.into()).await;
            }
            Err(err) => {
                tracing::error!(%id, %err, "cannot serialise a response");
                let error = JsonRpcErrorObject::new(
                    INTERNAL_ERROR,
                    format!("cannot encode the result: {err}"),
                );
                self.send_error(Some(id), error).await;
            }
        }
    }

    /// Answers request `id` (or an unreadable request, `None`) with an error.
    pub(crate) async fn send_error(&self, id: Option<RequestId>, error: JsonRpcErrorObject) {
        self.send(JsonRpcError { id, error }.into()).await;
    }

    /// Sends notification `N`.
    pub(crate) async fn send_notification<N: RpcNotification>(&self, params: &N::Params) {
        match serde_json::to_value(params) {
            Ok(params) => {
                let notification = JsonRpcNotification {
                    method: N::METHOD.to_string(),
                    params: Some(params),
                };
                self.send(notification.into()).await;
            }
            Err(err) => {
                tracing::error!(method = N::METHOD, %err, "cannot serialise a notification")
            }
        }
    }

    /// Sends request `R` to the client; the receiver completes with the client's answer. It
    /// errs (as a closed channel) only if the params cannot be serialised, which is logged.
    pub(crate) async fn send_request<R: RpcRequest>(
        &self,
        params: &R::Params,
    ) -> oneshot::Receiver<ClientReply> {
        let (tx, rx) = oneshot::channel();
        let params = match serde_json::to_value(params) {
            Ok(params) => params,
            Err(err) => {
                tracing::error!(method = R::METHOD, %err, "cannot serialise a request");
                return rx;
            }
        };
        let id = RequestId::Integer(self.inner.next_request_id.fetch_add(1, Ordering::Relaxed));
        self.pending().insert(id.clone(), tx);
        let request = JsonRpcRequest {
            id,
            method: R::METHOD.to_string(),
            params: Some(params),
        };
        self.send(request.into()).await;
        rx
    }

    /// Routes the client's answer to the request it answers. Returns `false` when no request
    /// with that id is pending.
    pub(crate) fn route_reply(&self, id: &RequestId, reply: ClientReply) -> bool {
        let Some(callback) = self.pending().remove(id) else {
            return false;
        };
        if callback.send(reply).is_err() {
            tracing::debug!(%id, "the task waiting for this reply has stopped");
        }
        true
    }

    fn pending(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RequestId, oneshot::Sender<ClientReply>>> {
        // The map stays consistent even if a holder panicked: every operation is one call.
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
