//! MCP 2026-07-28's multi-round-trip requests for Keel's approvals. A stateless server sends
//! its client no requests, so when a call asks a question (an approval elicitation) the HTTP
//! answer ends with an `input_required` result naming the question and an opaque
//! `requestState`, while the call itself waits here. The client's retry, carrying
//! `inputResponses` and that `requestState`, delivers the answers and continues the same
//! call's stream where it stopped. A call nobody comes back for is cancelled after a while.
//!
//! `requestState` is a random handle to state kept on the server, so a forged or altered one
//! names nothing and is refused; each handle is good for one retry.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt};
use keel_protocol::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::demux::Demux;
use super::event_log::EventLog;
use super::wire::{OnDrop, Present};
use crate::transport::Incoming;

/// Why a retry carrying `requestState` cannot continue its call.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RetryError {
    /// Forged, altered, expired or already used.
    #[error(
        "`requestState` names no waiting call (it is unknown, expired or already used); call \
         the tool again without it"
    )]
    UnknownState,
    /// The retry names another tool than the call it continues.
    #[error("this `requestState` belongs to a call of tool `{expected}`, not `{named}`")]
    OtherTool { expected: String, named: String },
    /// The processor is gone.
    #[error("the server is stopping")]
    Stopping,
}

/// One call waiting for its client's answers.
pub(crate) struct WaitingCall {
    /// The server's id of the call; the processor knows it by this.
    pub(crate) internal: RequestId,
    /// The call's stream.
    pub(crate) log: Arc<EventLog>,
    /// The last event the client was given.
    pub(crate) after: u64,
    /// The tool the call runs; a retry must name the same.
    pub(crate) tool: String,
    /// Questions still unanswered, by input key.
    pending: BTreeMap<String, JsonRpcRequest>,
}

/// What a retry's answers lead to.
pub(crate) enum Retried {
    /// Every question is answered: the call's stream continues.
    Continue(WaitingCall),
    /// Some questions are still unanswered: they are asked again under a new handle.
    StillWaiting { internal: RequestId, result: Value },
}

struct Entry {
    call: WaitingCall,
    /// Cancels the call when nobody comes back for it.
    _expiry: AbortOnDropHandle<()>,
}

/// The stateless endpoint's waiting calls, by `requestState`.
pub(crate) struct WaitingCalls {
    calls: Mutex<HashMap<String, Entry>>,
    incoming: mpsc::Sender<Incoming>,
    /// How long a call waits for its client's retry before it is cancelled.
    patience: Duration,
}

impl WaitingCalls {
    pub(crate) fn new(incoming: mpsc::Sender<Incoming>, patience: Duration) -> Arc<Self> {
        Arc::new(Self {
            calls: Mutex::new(HashMap::new()),
            incoming,
            patience,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // Each critical section is one map operation; a poisoned map is still valid.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `call` until its client retries, and returns the `input_required` result that
    /// tells the client what to answer.
    fn park(self: &Arc<Self>, call: WaitingCall) -> Value {
        let state = uuid::Uuid::new_v4().simple().to_string();
        let input_requests: Map<String, Value> = call
            .pending
            .iter()
            .map(|(key, request)| {
                let mut asked = json!({ "method": request.method });
                if let Some(params) = &request.params {
                    asked["params"] = params.clone();
                }
                (key.clone(), asked)
            })
            .collect();
        let weak = Arc::downgrade(self);
        let expiring = state.clone();
        let patience = self.patience;
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(patience).await;
            if let Some(waiting) = weak.upgrade() {
                waiting.expire(&expiring);
            }
        });
        self.lock().insert(
            state.clone(),
            Entry {
                call,
                _expiry: AbortOnDropHandle::new(expiry),
            },
        );
        json!({
            "resultType": "input_required",
            "inputRequests": input_requests,
            "requestState": state,
        })
    }

    /// Nobody came back: the call is cancelled, which withdraws its question and denies.
    fn expire(&self, state: &str) {
        let Some(entry) = self.lock().remove(state) else {
            return;
        };
        tracing::info!(
            request = %entry.call.internal,
            "no retry answered an input_required result in {:?}; cancelling its call",
            self.patience
        );
        cancel_call(
            &self.incoming,
            &entry.call.internal,
            "the client never answered",
        );
    }

    /// A retry: delivers the answers in `responses` to the call `state` names. Answers to
    /// questions not asked are ignored.
    pub(crate) async fn retry(
        self: &Arc<Self>,
        state: &str,
        tool: &str,
        responses: &Map<String, Value>,
        demux: &Demux,
    ) -> Result<Retried, RetryError> {
        let mut call = {
            let mut calls = self.lock();
            match calls.get(state) {
                None => return Err(RetryError::UnknownState),
                Some(entry) if entry.call.tool != tool => {
                    return Err(RetryError::OtherTool {
                        expected: entry.call.tool.clone(),
                        named: tool.to_string(),
                    });
                }
                Some(_) => {}
            }
            calls
                .remove(state)
                .map(|entry| entry.call)
                .ok_or(RetryError::UnknownState)?
        };
        let answered: Vec<String> = call
            .pending
            .keys()
            .filter(|key| responses.contains_key(*key))
            .cloned()
            .collect();
        for key in answered {
            let (Some(request), Some(result)) = (call.pending.remove(&key), responses.get(&key))
            else {
                continue;
            };
            demux.answered(&request.id);
            let answer = JsonRpcResponse {
                id: request.id,
                result: result.clone(),
            };
            self.incoming
                .send(Incoming::Message(answer.into()))
                .await
                .map_err(|_| RetryError::Stopping)?;
        }
        if call.pending.is_empty() {
            return Ok(Retried::Continue(call));
        }
        let internal = call.internal.clone();
        let result = self.park(call);
        Ok(Retried::StillWaiting { internal, result })
    }
}

/// One HTTP answer's worth of a call: its stream from where the client last stopped.
pub(crate) struct Round {
    pub(crate) internal: RequestId,
    pub(crate) log: Arc<EventLog>,
    pub(crate) after: u64,
    pub(crate) tool: String,
    /// Restores the client's id of the request this answer is for.
    pub(crate) present: Present,
}

impl Round {
    /// The answer's messages, each with its event id: the call's events, ending with its
    /// result, or with an `input_required` result at its next question (the call then waits
    /// in `waiting`, and `guard`, which cancels the call if the client leaves mid-answer, is
    /// disarmed).
    pub(crate) fn messages(
        self,
        waiting: Arc<WaitingCalls>,
        guard: OnDrop,
    ) -> impl Stream<Item = (Option<String>, JsonRpcMessage)> + Send + 'static {
        let events = Box::pin(self.log.follow(self.after));
        futures::stream::unfold(Some((self, events, waiting, guard)), |state| async move {
            let (round, mut events, waiting, mut guard) = state?;
            let event = events.next().await?;
            let message = event.message?;
            if let JsonRpcMessage::Request(request) = &*message {
                let internal = round.internal.clone();
                let call = WaitingCall {
                    internal: round.internal.clone(),
                    log: Arc::clone(&round.log),
                    after: event.sequence,
                    tool: round.tool.clone(),
                    pending: BTreeMap::from([(input_key(&request.id), request.clone())]),
                };
                let result = waiting.park(call);
                guard.disarm();
                let answer = (round.present)(
                    &JsonRpcResponse {
                        id: internal,
                        result,
                    }
                    .into(),
                );
                return Some(((None, answer), None));
            }
            let shown = (round.present)(&message);
            Some((
                (Some(event.id), shown),
                Some((round, events, waiting, guard)),
            ))
        })
    }
}

/// Asks the processor to cancel call `internal`, as a client's `notifications/cancelled`
/// would (there is no session to send one on).
pub(super) fn cancel_call(incoming: &mpsc::Sender<Incoming>, internal: &RequestId, reason: &str) {
    let cancelled = JsonRpcNotification {
        method: "notifications/cancelled".to_string(),
        params: Some(json!({ "requestId": internal, "reason": reason })),
    };
    if incoming
        .try_send(Incoming::Message(cancelled.into()))
        .is_err()
    {
        tracing::debug!("cannot queue the cancellation; the call runs to its end");
    }
}

/// The input key a question is answered under.
fn input_key(id: &RequestId) -> String {
    format!("keel-approval-{id}")
}
