//! The line protocol: one writer for everything sent to the editor, and the agent's own
//! requests to the editor with their answers matched by id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use keel_protocol::{
    JsonRpcError, JsonRpcErrorObject, JsonRpcFraming, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, RequestId,
};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Lines waiting for the writer.
const OUTGOING_CAPACITY: usize = 1024;

/// What the editor answered to one of the agent's requests.
pub(crate) type Answer = Result<Value, JsonRpcErrorObject>;

/// What the writer is handed.
enum Out {
    /// A message, as one line.
    Line(String),
    /// Report once every earlier line is written.
    Flush(oneshot::Sender<()>),
}

/// Sends messages to the editor.
#[derive(Clone)]
pub(crate) struct Wire {
    lines: mpsc::Sender<Out>,
    next_id: Arc<AtomicI64>,
    waiting: Arc<Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>>,
    /// Set once the editor and the agent agreed on the draft v2 at `initialize`: what is sent
    /// in v1's shapes goes out in v2's.
    v2: Arc<std::sync::OnceLock<Arc<crate::v2::Converter>>>,
}

impl Wire {
    /// Starts the writer on `output`.
    pub(crate) fn start<W>(mut output: W) -> Self
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (lines, mut queue) = mpsc::channel::<Out>(OUTGOING_CAPACITY);
        tokio::spawn(async move {
            let mut open = true;
            while let Some(out) = queue.recv().await {
                match out {
                    Out::Line(mut line) if open => {
                        line.push('\n');
                        if output.write_all(line.as_bytes()).await.is_err()
                            || output.flush().await.is_err()
                        {
                            tracing::debug!("the editor stopped reading");
                            open = false;
                        }
                    }
                    Out::Line(_) => {}
                    Out::Flush(done) => {
                        let _ignored = done.send(());
                    }
                }
            }
        });
        Self {
            lines,
            next_id: Arc::new(AtomicI64::new(0)),
            waiting: Arc::default(),
            v2: Arc::default(),
        }
    }

    /// From now on, speaks the draft v2 (the connection's `initialize` asked for it).
    pub(crate) fn speak_v2(&self) -> Arc<crate::v2::Converter> {
        Arc::clone(self.v2.get_or_init(Arc::default))
    }

    /// The v2 translation, when the connection speaks v2.
    pub(crate) fn v2(&self) -> Option<&Arc<crate::v2::Converter>> {
        self.v2.get()
    }

    async fn send(&self, message: JsonRpcMessage) {
        match message.to_json(JsonRpcFraming::WithVersion) {
            Ok(line) => {
                if self.lines.send(Out::Line(line)).await.is_err() {
                    tracing::debug!("the writer is gone");
                }
            }
            Err(err) => tracing::warn!("cannot encode a message for the editor: {err}"),
        }
    }

    /// Waits until everything sent so far is written.
    pub(crate) async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.lines.send(Out::Flush(done)).await.is_ok() {
            let _ignored = written.await;
        }
    }

    /// Answers a request.
    pub(crate) async fn respond(&self, id: RequestId, answer: Answer) {
        let message = match answer {
            Ok(result) => JsonRpcMessage::Response(JsonRpcResponse { id, result }),
            Err(error) => JsonRpcMessage::Error(JsonRpcError {
                id: Some(id),
                error,
            }),
        };
        self.send(message).await;
    }

    /// An error for a message that could not be read at all.
    pub(crate) async fn unreadable(&self, error: JsonRpcErrorObject) {
        self.send(JsonRpcMessage::Error(JsonRpcError { id: None, error }))
            .await;
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        self.send(JsonRpcMessage::Notification(JsonRpcNotification {
            method: method.to_string(),
            params: Some(params),
        }))
        .await;
    }

    /// Sends one `session/update` (as what it becomes in v2, when the connection speaks v2).
    pub(crate) async fn session_update(
        &self,
        session_id: &str,
        update: keel_protocol::acp::SessionUpdate,
    ) {
        if let Some(v2) = self.v2() {
            for update in v2.update(session_id, update) {
                self.session_update_v2(session_id, update).await;
            }
            return;
        }
        let params = keel_protocol::acp::SessionNotification {
            session_id: session_id.to_string(),
            update,
        };
        match serde_json::to_value(&params) {
            Ok(params) => self.notify("session/update", params).await,
            Err(err) => tracing::warn!("cannot encode an update: {err}"),
        }
    }

    /// Sends one v2 `session/update`.
    pub(crate) async fn session_update_v2(
        &self,
        session_id: &str,
        update: keel_protocol::acp::v2::SessionUpdate,
    ) {
        let params = keel_protocol::acp::v2::SessionNotification {
            session_id: session_id.to_string(),
            update,
        };
        match serde_json::to_value(&params) {
            Ok(params) => self.notify("session/update", params).await,
            Err(err) => tracing::warn!("cannot encode an update: {err}"),
        }
    }

    /// Sends a request; the answer arrives on the returned receiver (dropped unanswered if
    /// the editor goes away).
    pub(crate) async fn request(&self, method: &str, params: Value) -> oneshot::Receiver<Answer> {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id.clone(), tx);
        self.send(JsonRpcMessage::Request(JsonRpcRequest {
            id,
            method: method.to_string(),
            params: Some(params),
            trace: None,
        }))
        .await;
        rx
    }

    /// Asks the editor's permission for a tool call (in v2's shape when the connection speaks
    /// v2); the answer arrives on the returned receiver.
    pub(crate) async fn request_permission(
        &self,
        request: keel_protocol::acp::RequestPermissionRequest,
    ) -> Result<oneshot::Receiver<Answer>, serde_json::Error> {
        let params = match self.v2() {
            Some(_) => serde_json::to_value(crate::v2::permission(request))?,
            None => serde_json::to_value(&request)?,
        };
        Ok(self.request("session/request_permission", params).await)
    }

    /// Hands the editor's answer to the request waiting for it.
    pub(crate) fn answered(&self, id: &RequestId, answer: Answer) {
        match lock(&self.waiting).remove(id) {
            Some(waiter) => {
                let _ignored = waiter.send(answer);
            }
            None => tracing::debug!(?id, "an answer to no request of ours"),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
