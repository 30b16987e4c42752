//! The JSON-RPC side of the client: request ids, pending answers, and the reader task that
//! routes responses to callers and notifications to the event broadcast.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use keel_protocol::{
    JsonRpcError, JsonRpcErrorObject, JsonRpcFraming, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, RequestId, RpcRequest,
};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::buffers::BufferPool;
use crate::codec::{
    DECODED_CHUNK_BYTES, IDLE_DECODE_BUFFERS, decode_notification, decode_notification_line,
    decode_output_delta_line,
};
use crate::error::{ExecServerError, Result};
use crate::event::ExecServerEvent;
use crate::transport::Frame;

type Answer = std::result::Result<Value, JsonRpcErrorObject>;

#[derive(Default)]
struct Pending {
    answers: HashMap<i64, oneshot::Sender<Answer>>,
    closed: bool,
}

/// Sends requests and waits for their answers.
pub(super) struct Remote {
    outgoing: mpsc::Sender<String>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicI64,
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Remote {
    /// The sender half and the reader future that must run for answers to arrive.
    pub(super) fn new(
        incoming: mpsc::Receiver<Frame>,
        outgoing: mpsc::Sender<String>,
        events: broadcast::Sender<ExecServerEvent>,
    ) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let pending = Arc::new(Mutex::new(Pending::default()));
        let reader = read_loop(incoming, Arc::clone(&pending), events);
        (
            Self {
                outgoing,
                pending,
                next_id: AtomicI64::new(1),
            },
            reader,
        )
    }

    /// Sends a request and waits for its answer.
    ///
    /// Cancel safe: a late answer to a dropped call is discarded.
    pub(super) async fn request<R: RpcRequest>(&self, params: R::Params) -> Result<R::Response> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let params = serde_json::to_value(params)
            .map_err(|err| ExecServerError::Protocol(format!("encoding `{}`: {err}", R::METHOD)))?;
        let line = JsonRpcMessage::Request(JsonRpcRequest {
            id: RequestId::Integer(id),
            method: R::METHOD.to_string(),
            params: Some(params),
            trace: None,
        })
        .to_json(JsonRpcFraming::WithoutVersion)
        .map_err(|err| ExecServerError::Protocol(format!("encoding `{}`: {err}", R::METHOD)))?;
        let (answer_tx, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.closed {
                return Err(ExecServerError::ConnectionClosed);
            }
            pending.answers.insert(id, answer_tx);
        }
        let _unregister = Unregister {
            pending: &self.pending,
            id,
        };
        self.outgoing
            .send(line)
            .await
            .map_err(|_| ExecServerError::ConnectionClosed)?;
        match answer.await {
            Ok(Ok(result)) => serde_json::from_value(result).map_err(|err| {
                ExecServerError::Protocol(format!("unexpected `{}` result: {err}", R::METHOD))
            }),
            Ok(Err(error)) => Err(ExecServerError::Rpc {
                method: R::METHOD,
                error,
            }),
            Err(_) => Err(ExecServerError::ConnectionClosed),
        }
    }

    /// Sends the `initialized` notification.
    pub(super) async fn notify_initialized(&self) -> Result<()> {
        let line = JsonRpcMessage::Notification(JsonRpcNotification {
            method: "initialized".to_string(),
            params: Some(Value::Object(serde_json::Map::new())),
        })
        .to_json(JsonRpcFraming::WithoutVersion)
        .map_err(|err| ExecServerError::Protocol(format!("encoding `initialized`: {err}")))?;
        self.outgoing
            .send(line)
            .await
            .map_err(|_| ExecServerError::ConnectionClosed)
    }
}

/// Forgets a pending request when its caller stops waiting.
struct Unregister<'a> {
    pending: &'a Mutex<Pending>,
    id: i64,
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        lock(self.pending).answers.remove(&self.id);
    }
}

/// Routes every incoming message until the connection ends, then fails all pending calls.
async fn read_loop(
    mut incoming: mpsc::Receiver<Frame>,
    pending: Arc<Mutex<Pending>>,
    events: broadcast::Sender<ExecServerEvent>,
) {
    let buffers = BufferPool::new(DECODED_CHUNK_BYTES, IDLE_DECODE_BUFFERS);
    while let Some(frame) = incoming.recv().await {
        let routed = match frame {
            Frame::Event(event) => {
                publish(&events, event);
                continue;
            }
            Frame::Text(text) => route(&text, &pending, &events, &buffers),
            Frame::Line(line) => {
                // Output notifications dominate the traffic: decoded straight from the line,
                // they need no separate UTF-8 check (`route` would try this path again).
                if let Some(event) = decode_output_delta_line(&line, &buffers) {
                    publish(&events, event);
                    continue;
                }
                let Ok(text) = std::str::from_utf8(&line) else {
                    tracing::warn!("message from the exec-server is not UTF-8; closing");
                    break;
                };
                route(text, &pending, &events, &buffers)
            }
            // Client readers hand over raw lines; a parsed message is routed as its text.
            Frame::Message(message) => match serde_json::to_string(&message) {
                Ok(text) => route(&text, &pending, &events, &buffers),
                Err(err) => {
                    tracing::warn!(%err, "cannot re-encode a message; closing");
                    break;
                }
            },
            Frame::Invalid(reason) => {
                tracing::warn!(%reason, "unreadable message from the exec-server; closing");
                break;
            }
            Frame::Rejected(bad) => {
                tracing::warn!(%bad, "unreadable message from the exec-server; closing");
                break;
            }
        };
        if let Err(err) = routed {
            tracing::warn!(%err, "bad message from the exec-server; closing");
            break;
        }
    }
    let mut pending = lock(&pending);
    pending.closed = true;
    pending.answers.clear();
}

fn route(
    text: &str,
    pending: &Mutex<Pending>,
    events: &broadcast::Sender<ExecServerEvent>,
    buffers: &BufferPool,
) -> serde_json::Result<()> {
    // Notifications dominate the traffic; decode them straight into typed events.
    if let Some(event) = decode_output_delta_line(text.as_bytes(), buffers) {
        publish(events, event);
        return Ok(());
    }
    if text.starts_with(r#"{"method":"#)
        && let Ok(event) = decode_notification_line(text)
    {
        publish(events, event);
        return Ok(());
    }
    match JsonRpcMessage::from_json(text)? {
        JsonRpcMessage::Notification(notification) => {
            publish(events, decode_notification(notification)?);
        }
        JsonRpcMessage::Response(JsonRpcResponse { id, result }) => {
            answer(pending, &id, Ok(result))
        }
        JsonRpcMessage::Error(JsonRpcError {
            id: Some(id),
            error,
        }) => {
            answer(pending, &id, Err(error));
        }
        JsonRpcMessage::Error(JsonRpcError { id: None, error }) => {
            tracing::warn!(%error, "the exec-server reported an error");
        }
        JsonRpcMessage::Request(request) => {
            tracing::warn!(method = %request.method, "ignoring a request from the exec-server");
        }
    }
    Ok(())
}

fn publish(events: &broadcast::Sender<ExecServerEvent>, event: ExecServerEvent) {
    if events.send(event).is_err() {
        tracing::trace!("event dropped: no subscriber");
    }
}

fn answer(pending: &Mutex<Pending>, id: &RequestId, answer: Answer) {
    let RequestId::Integer(id) = id else {
        tracing::warn!(%id, "answer with an id this client never sent");
        return;
    };
    match lock(pending).answers.remove(id) {
        Some(waiter) => {
            if waiter.send(answer).is_err() {
                tracing::debug!(id, "answer arrived after its caller gave up");
            }
        }
        None => tracing::debug!(id, "answer to an unknown or abandoned request"),
    }
}
