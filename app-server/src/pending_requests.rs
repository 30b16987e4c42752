//! The requests a client has sent and waits to hear back on, by id: the same bookkeeping
//! for the in-process client and the websocket one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use keel_protocol::{JsonRpcErrorObject, JsonRpcMessage, RequestId};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::client_error::InProcessError;

type Answer = Result<Value, JsonRpcErrorObject>;

/// Callers waiting for a response; `None` once responses can no longer arrive.
pub(crate) struct PendingRequests {
    next_id: AtomicI64,
    waiting: Mutex<Option<HashMap<RequestId, oneshot::Sender<Answer>>>>,
}

/// Where the answer to one request arrives.
pub(crate) struct AwaitedAnswer(oneshot::Receiver<Answer>);

impl PendingRequests {
    pub(crate) fn new() -> Self {
        Self {
            next_id: AtomicI64::new(1),
            waiting: Mutex::new(Some(HashMap::new())),
        }
    }

    /// A fresh request id and where its answer will arrive; `Closed` once answers cannot.
    pub(crate) fn register(&self) -> Result<(RequestId, AwaitedAnswer), InProcessError> {
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        match self.lock().as_mut() {
            Some(waiting) => waiting.insert(id.clone(), tx),
            None => return Err(InProcessError::Closed),
        };
        Ok((id, AwaitedAnswer(rx)))
    }

    /// Hands a response or error to its caller; anything else (a notification, a server
    /// request) is given back.
    pub(crate) fn settle(&self, message: JsonRpcMessage) -> Option<JsonRpcMessage> {
        let (id, answer) = match message {
            JsonRpcMessage::Response(response) => (Some(response.id), Ok(response.result)),
            JsonRpcMessage::Error(error) => (error.id, Err(error.error)),
            other @ (JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_)) => {
                return Some(other);
            }
        };
        let waiting = id.and_then(|id| self.lock().as_mut().and_then(|w| w.remove(&id)));
        match (waiting, answer) {
            (Some(tx), answer) => {
                if tx.send(answer).is_err() {
                    tracing::debug!("an answer for a request whose caller went away");
                }
            }
            (None, Err(error)) => {
                tracing::warn!("server error without a pending request: {}", error.message);
            }
            (None, Ok(_)) => tracing::debug!("a response to no pending request"),
        }
        None
    }

    /// No answer will come any more: callers waiting now, and any that ask later, get
    /// `Closed` instead of waiting forever.
    pub(crate) fn close(&self) {
        self.lock().take();
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, Option<HashMap<RequestId, oneshot::Sender<Answer>>>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl AwaitedAnswer {
    /// The typed result, or the server's error.
    pub(crate) async fn typed<R: serde::de::DeserializeOwned>(self) -> Result<R, InProcessError> {
        let value = self
            .0
            .await
            .map_err(|_| InProcessError::Closed)?
            .map_err(InProcessError::Rpc)?;
        Ok(serde_json::from_value(value)?)
    }
}
