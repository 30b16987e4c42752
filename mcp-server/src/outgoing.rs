//! The outgoing half of the connection, shared by every task: responses, notifications and
//! server→client requests all go through one bounded channel to the writer task.
//!
//! Server→client requests get ids from a counter; each pending request keeps a one-shot
//! callback that the processor completes when the client's response (or error) arrives.
//! The waiting side holds a [`PendingReply`]: if it is dropped unanswered (its tool call
//! ended), the callback is removed and the client is told with `notifications/cancelled`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use crate::methods::mcp_server_notification;
use keel_protocol::{
    INTERNAL_ERROR, JsonRpcError, JsonRpcErrorObject, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, RequestId, RpcNotification, RpcRequest,
};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc::error::TrySendError;
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
        if let Some(notification) = notification::<N>(params) {
            self.send(notification).await;
        }
    }

    /// Sends request `R` to the client; the returned [`PendingReply`] completes with the
    /// client's answer. It errs (as a closed channel) only if the params cannot be
    /// serialised, which is logged.
    pub(crate) async fn send_request<R: RpcRequest>(&self, params: &R::Params) -> PendingReply {
        let (tx, rx) = oneshot::channel();
        let mut pending = PendingReply {
            id: None,
            rx,
            outgoing: self.clone(),
        };
        let params = match serde_json::to_value(params) {
            Ok(params) => params,
            Err(err) => {
                tracing::error!(method = R::METHOD, %err, "cannot serialise a request");
                return pending;
            }
        };
        let id = RequestId::Integer(self.inner.next_request_id.fetch_add(1, Ordering::Relaxed));
        self.pending().insert(id.clone(), tx);
        pending.id = Some(id.clone());
        let request = JsonRpcRequest {
            id,
            method: R::METHOD.to_string(),
            params: Some(params),
            trace: None,
        };
        self.send(request.into()).await;
        pending
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

    /// Forgets request `id` if the client has not answered it yet, and then tells the client
    /// with `notifications/cancelled`. Synchronous (it runs in `Drop`): when the outgoing
    /// queue is full the notification is skipped and logged; the client's late answer is then
    /// logged as a reply to no pending request.
    fn forget(&self, id: RequestId) {
        if self.pending().remove(&id).is_none() {
            return;
        }
        tracing::debug!(%id, "request abandoned unanswered; telling the client");
        let request_id = serde_json::to_value(&id)
            .ok()
            .and_then(|value| serde_json::from_value(value).ok());
        let params = rmcp::model::CancelledNotificationParam::new(
            request_id,
            Some("the tool call that asked has ended".to_string()),
        );
        let Some(message) = notification::<mcp_server_notification::Cancelled>(&params) else {
            return;
        };
        match self.inner.tx.try_send(message) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                tracing::debug!(%id, "outgoing queue full; not sending notifications/cancelled")
            }
            Err(TrySendError::Closed(_)) => {
                tracing::debug!(%id, "the writer has stopped; not sending notifications/cancelled")
            }
        }
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

/// Builds notification `N`; `None` (logged) if its params cannot be serialised.
fn notification<N: RpcNotification>(params: &N::Params) -> Option<JsonRpcMessage> {
    match serde_json::to_value(params) {
        Ok(params) => Some(
            JsonRpcNotification {
                method: N::METHOD.to_string(),
                params: Some(params),
            }
            .into(),
        ),
        Err(err) => {
            tracing::error!(method = N::METHOD, %err, "cannot serialise a notification");
            None
        }
    }
}

/// The client's answer to one server→client request, as a future. Dropping it before the
/// answer arrives withdraws the request (see [`OutgoingSender::forget`]), so an abandoned
/// elicitation neither leaks its callback nor stays open in the client.
///
/// Cancel safe: polling it again after a `select!` dropped an earlier poll loses nothing.
#[must_use = "dropping it withdraws the request"]
pub(crate) struct PendingReply {
    /// `None` when the request was never sent.
    id: Option<RequestId>,
    rx: oneshot::Receiver<ClientReply>,
    outgoing: OutgoingSender,
}

impl Future for PendingReply {
    type Output = Result<ClientReply, oneshot::error::RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx)
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.outgoing.forget(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::mcp_server_request;
    use keel_protocol::mcp::ElicitRequestParams;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn elicitation() -> ElicitRequestParams {
        serde_json::from_value(json!({
            "message": "ok?",
            "requestedSchema": {"type": "object", "properties": {}},
            "codex_elicitation": "exec-approval",
            "threadId": "0199a213-81c0-7800-8aa1-bbab2a035a53",
            "codex_mcp_tool_call_id": "1",
            "codex_event_id": "e",
            "codex_call_id": "c",
            "codex_command": ["true"],
            "codex_cwd": "/",
            "codex_parsed_cmd": [],
        }))
        .unwrap_or_else(|err| panic!("elicitation params: {err}"))
    }

    #[tokio::test]
    async fn an_abandoned_request_is_withdrawn() {
        let (tx, mut rx) = mpsc::channel(8);
        let outgoing = OutgoingSender::new(tx);
        let reply = outgoing
            .send_request::<mcp_server_request::Elicit>(&elicitation())
            .await;
        let sent = rx.recv().await;
        let Some(JsonRpcMessage::Request(request)) = sent else {
            panic!("expected the request, got {sent:?}");
        };
        drop(reply);
        let withdrawn = rx.recv().await;
        let Some(JsonRpcMessage::Notification(notification)) = withdrawn else {
            panic!("expected notifications/cancelled, got {withdrawn:?}");
        };
        assert_eq!(notification.method, "notifications/cancelled");
        assert_eq!(
            notification
                .params
                .map(|params| params["requestId"].clone()),
            Some(serde_json::to_value(&request.id).unwrap_or_default())
        );
        assert!(!outgoing.route_reply(&request.id, Ok(json!({}))));
    }

    #[tokio::test]
    async fn an_answered_request_is_not_withdrawn() {
        let (tx, mut rx) = mpsc::channel(8);
        let outgoing = OutgoingSender::new(tx);
        let reply = outgoing
            .send_request::<mcp_server_request::Elicit>(&elicitation())
            .await;
        let sent = rx.recv().await;
        let Some(JsonRpcMessage::Request(request)) = sent else {
            panic!("expected the request, got {sent:?}");
        };
        assert!(outgoing.route_reply(&request.id, Ok(json!({"action": "accept"}))));
        drop(reply);
        assert!(rx.try_recv().is_err(), "nothing more is sent");
    }
}
