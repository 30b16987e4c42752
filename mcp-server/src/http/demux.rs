//! Which stream each server message goes out on. Over stdio every message shares one pipe;
//! over Streamable HTTP a response, and every notification and request that belongs to the
//! call it answers, go out on the stream of the POST that made the call, and anything else
//! on the session's standalone GET stream.
//!
//! What a message belongs to is read from the message itself: a response's `id`; the
//! `_meta.requestId` of `codex/event` and `initial_state`; the `codex_mcp_tool_call_id` of an
//! approval elicitation; for `notifications/cancelled` withdrawing an elicitation, the stream
//! that elicitation went out on.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use keel_protocol::{JsonRpcMessage, RequestId};
use serde_json::Value;
use tokio::sync::mpsc;

use super::event_log::EventLog;

/// Finished streams kept for a client that reconnects just after its last event; older
/// ones are forgotten (a resume then names an unknown stream).
const RETAINED_FINISHED_STREAMS: usize = 32;

/// The streams of one processor.
pub(crate) struct Demux {
    inner: Mutex<Inner>,
}

struct Inner {
    next_number: u64,
    /// Open streams by the request they will answer.
    by_request: HashMap<RequestId, Arc<EventLog>>,
    /// Every retained stream by number, for `Last-Event-ID`.
    by_number: HashMap<u64, Arc<EventLog>>,
    /// Finished streams, oldest first.
    finished: VecDeque<u64>,
    /// Server→client requests still unanswered, by id, with the stream they went out on.
    server_requests: HashMap<RequestId, Arc<EventLog>>,
    /// Stream 0: messages that belong to no call.
    standalone: Arc<EventLog>,
}

/// Why a stream cannot be opened for a request.
#[derive(Debug)]
pub(crate) struct DuplicateRequest;

impl Demux {
    pub(crate) fn new() -> Arc<Self> {
        let standalone = EventLog::new(0);
        Arc::new(Self {
            inner: Mutex::new(Inner {
                next_number: 1,
                by_request: HashMap::new(),
                by_number: HashMap::from([(0, Arc::clone(&standalone))]),
                finished: VecDeque::new(),
                server_requests: HashMap::new(),
                standalone,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Each critical section is a few map operations that cannot panic midway.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the stream that will carry request `id`'s response; an id already waiting for
    /// its response is refused (the client reused it).
    pub(crate) fn open(&self, id: &RequestId) -> Result<Arc<EventLog>, DuplicateRequest> {
        let mut inner = self.lock();
        if inner.by_request.contains_key(id) {
            return Err(DuplicateRequest);
        }
        let number = inner.next_number;
        inner.next_number += 1;
        let log = EventLog::new(number);
        inner.by_request.insert(id.clone(), Arc::clone(&log));
        inner.by_number.insert(number, Arc::clone(&log));
        Ok(log)
    }

    /// The standalone stream (GET).
    pub(crate) fn standalone(&self) -> Arc<EventLog> {
        Arc::clone(&self.lock().standalone)
    }

    /// A retained stream by number, for a resuming client.
    pub(crate) fn stream(&self, number: u64) -> Option<Arc<EventLog>> {
        self.lock().by_number.get(&number).cloned()
    }

    /// Whether any call's stream is still open (its call is running).
    pub(crate) fn has_open_calls(&self) -> bool {
        !self.lock().by_request.is_empty()
    }

    /// Ends every stream: the processor behind them has stopped.
    pub(crate) fn close_all(&self) {
        let inner = self.lock();
        for log in inner.by_number.values() {
            log.close();
        }
    }

    /// Puts one server message on the stream it belongs to.
    pub(crate) fn route(&self, message: JsonRpcMessage) {
        let mut inner = self.lock();
        match &message {
            JsonRpcMessage::Response(response) => {
                let id = response.id.clone();
                inner.finish(&id, message);
            }
            JsonRpcMessage::Error(error) => match error.id.clone() {
                Some(id) if inner.by_request.contains_key(&id) => inner.finish(&id, message),
                _ => inner.standalone.push(message, false),
            },
            JsonRpcMessage::Request(request) => {
                let log = tool_call_id(request.params.as_ref())
                    .and_then(|call| inner.open_stream_for(&call))
                    .unwrap_or_else(|| Arc::clone(&inner.standalone));
                inner
                    .server_requests
                    .insert(request.id.clone(), Arc::clone(&log));
                log.push(message, false);
            }
            JsonRpcMessage::Notification(notification) => {
                let params = notification.params.as_ref();
                let log = if notification.method == "notifications/cancelled" {
                    withdrawn_request(params)
                        .and_then(|id| inner.server_requests.remove(&id))
                        .filter(|log| !log.is_closed())
                } else {
                    meta_request_id(params).and_then(|id| inner.by_request.get(&id).cloned())
                };
                let log = log.unwrap_or_else(|| Arc::clone(&inner.standalone));
                log.push(message, false);
            }
        }
    }

    /// The client answered server request `id`: it no longer needs a stream.
    pub(crate) fn answered(&self, id: &RequestId) {
        self.lock().server_requests.remove(id);
    }
}

impl Inner {
    /// Writes the response to request `id` and retires its stream.
    fn finish(&mut self, id: &RequestId, message: JsonRpcMessage) {
        let Some(log) = self.by_request.remove(id) else {
            tracing::debug!(%id, "a response for no open stream; sent on the standalone stream");
            self.standalone.push(message, false);
            return;
        };
        log.push(message, true);
        self.server_requests
            .retain(|_, carrier| !Arc::ptr_eq(carrier, &log));
        self.finished.push_back(log.number());
        while self.finished.len() > RETAINED_FINISHED_STREAMS {
            if let Some(number) = self.finished.pop_front() {
                self.by_number.remove(&number);
            }
        }
    }

    /// The open stream of the call whose id prints as `call` (the elicitation names it as
    /// a string).
    fn open_stream_for(&self, call: &str) -> Option<Arc<EventLog>> {
        self.by_request
            .iter()
            .find(|(id, _)| id.to_string() == call)
            .map(|(_, log)| Arc::clone(log))
    }
}

/// `params._meta.requestId` (Keel's `codex/event` and `initial_state`).
fn meta_request_id(params: Option<&Value>) -> Option<RequestId> {
    serde_json::from_value(params?.get("_meta")?.get("requestId")?.clone()).ok()
}

/// `params.codex_mcp_tool_call_id` of an approval elicitation.
fn tool_call_id(params: Option<&Value>) -> Option<String> {
    match params?.get("codex_mcp_tool_call_id")? {
        Value::String(id) => Some(id.clone()),
        Value::Number(id) => Some(id.to_string()),
        _ => None,
    }
}

/// `params.requestId` of `notifications/cancelled`.
fn withdrawn_request(params: Option<&Value>) -> Option<RequestId> {
    serde_json::from_value(params?.get("requestId")?.clone()).ok()
}

/// Routes a processor's output into `demux` until the processor stops, then ends every
/// stream so no client waits on a call that can no longer answer.
pub(crate) async fn route_all(mut outgoing: mpsc::Receiver<JsonRpcMessage>, demux: Arc<Demux>) {
    while let Some(message) = outgoing.recv().await {
        demux.route(message);
    }
    demux.close_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use keel_protocol::{JsonRpcNotification, JsonRpcRequest, JsonRpcResponse};
    use serde_json::json;

    fn methods(log: &Arc<EventLog>) -> Vec<String> {
        futures::executor::block_on(log.follow(0).collect::<Vec<_>>())
            .into_iter()
            .map(|event| match event.message.as_deref() {
                Some(JsonRpcMessage::Notification(n)) => n.method.clone(),
                Some(JsonRpcMessage::Request(r)) => r.method.clone(),
                Some(JsonRpcMessage::Response(_)) => "response".to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_calls_messages_go_on_its_stream_and_the_rest_on_the_standalone_one() {
        let demux = Demux::new();
        let call = RequestId::Integer(5);
        let log = demux.open(&call).unwrap();
        assert!(demux.open(&call).is_err(), "an id in use is refused");
        let note = |method: &str, params| -> JsonRpcMessage {
            JsonRpcNotification {
                method: method.to_string(),
                params: Some(params),
            }
            .into()
        };
        demux.route(note("codex/event", json!({"_meta": {"requestId": 5}})));
        demux.route(
            JsonRpcRequest {
                id: RequestId::Integer(0),
                method: "elicitation/create".to_string(),
                params: Some(json!({"codex_mcp_tool_call_id": "5"})),
                trace: None,
            }
            .into(),
        );
        demux.route(note("notifications/cancelled", json!({"requestId": 0})));
        demux.route(note("codex/event", json!({"_meta": {"requestId": 6}})));
        demux.route(
            JsonRpcResponse {
                id: call.clone(),
                result: json!({}),
            }
            .into(),
        );
        assert_eq!(
            methods(&log),
            [
                "codex/event",
                "elicitation/create",
                "notifications/cancelled",
                "response"
            ]
        );
        demux.close_all();
        assert_eq!(methods(&demux.standalone()), ["codex/event"]);
        assert!(demux.stream(log.number()).is_some(), "kept for resumption");
        assert!(!demux.has_open_calls());
    }
}
