//! The mock's shared state: the turn queue, the request log and the invariant record.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use crate::mock::capture::CapturedRequest;
use crate::mock::invariants::{self, Violation};
use crate::mock::script::Turn;

/// Chooses the reply to a model request; `None` falls back to the scripted queue.
pub type Responder = Arc<dyn Fn(&CapturedRequest) -> Option<Turn> + Send + Sync>;

/// State shared by the server handle and every connection task.
pub(crate) struct Shared {
    /// The model id advertised and echoed in responses.
    pub(crate) model: String,
    /// The optional hook consulted before the queue.
    pub(crate) responder: Option<Responder>,
    /// The only API key accepted, when one is required.
    pub(crate) api_key: Option<String>,
    /// What the mock says about its model besides the id: extra fields of its `GET /models`
    /// entry, and the answer to Ollama's `POST /api/show`.
    pub(crate) metadata: ModelMetadata,
    /// The whole script, when it starts over once the queue is used up.
    replay: Option<Vec<Turn>>,
    /// Counts model requests recorded, so tests can wait for the n-th without sleeping.
    pub(crate) model_requests: watch::Sender<usize>,
    state: Mutex<State>,
}

/// What a server may say about its model (see [`Shared::metadata`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelMetadata {
    /// Merged into the model's `GET /models` entry (e.g. vLLM's `max_model_len`).
    pub(crate) list_fields: serde_json::Map<String, serde_json::Value>,
    /// The body of `POST /api/show`; that endpoint answers 404 without it.
    pub(crate) ollama_show: Option<serde_json::Value>,
    /// The version `GET /api/version` reports; that endpoint answers 404 without it.
    pub(crate) ollama_version: Option<String>,
}

/// The mutable part, behind one lock held only for bookkeeping (never across an await).
#[derive(Default)]
struct State {
    turns: VecDeque<Turn>,
    served: usize,
    requests: Vec<CapturedRequest>,
    violations: Vec<Violation>,
    emitted_call_ids: HashSet<String>,
}

impl Shared {
    /// Shared state serving `turns` in order (over and over when `repeat` is set).
    pub(crate) fn new(
        model: String,
        turns: Vec<Turn>,
        responder: Option<Responder>,
        repeat: bool,
        api_key: Option<String>,
        metadata: ModelMetadata,
    ) -> Self {
        Self {
            model,
            responder,
            api_key,
            metadata,
            replay: (repeat && !turns.is_empty()).then(|| turns.clone()),
            model_requests: watch::Sender::new(0),
            state: Mutex::new(State {
                turns: turns.into(),
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the log from the others.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a request, giving it the next index and checking model requests against the
    /// invariants. `build` receives the index and returns the request with any violation
    /// found while parsing it.
    pub(crate) fn record(
        &self,
        build: impl FnOnce(usize) -> (CapturedRequest, Option<Violation>),
    ) -> CapturedRequest {
        let captured = {
            let mut state = self.lock();
            let (captured, violation) = build(state.requests.len());
            state.violations.extend(violation);
            if captured.endpoint.is_model_request() && !captured.body.is_null() {
                let found = invariants::check(&captured, &state.emitted_call_ids);
                state.violations.extend(found);
            }
            state.requests.push(captured.clone());
            captured
        };
        if captured.endpoint.is_model_request() {
            self.model_requests.send_modify(|count| *count += 1);
        }
        captured
    }

    /// Chooses the turn answering `request`: the responder's, else the next queued one. `None`
    /// means the script is exhausted, which is recorded as a violation.
    pub(crate) fn next_turn(&self, request: &CapturedRequest) -> Option<Turn> {
        let from_responder = self.responder.as_ref().and_then(|respond| respond(request));
        let mut state = self.lock();
        if state.turns.is_empty()
            && let Some(replay) = &self.replay
        {
            state.turns.extend(replay.iter().cloned());
        }
        let turn = from_responder.or_else(|| state.turns.pop_front());
        match &turn {
            Some(turn) => {
                state.served += 1;
                let ids = turn.items.iter().filter_map(|item| item.call_id());
                state.emitted_call_ids.extend(ids.map(str::to_owned));
            }
            None => {
                let served = state.served;
                state.violations.push(Violation::ScriptExhausted {
                    request: request.index,
                    served,
                });
            }
        }
        turn
    }

    /// Appends a turn to the queue.
    pub(crate) fn push_turn(&self, turn: Turn) {
        self.lock().turns.push_back(turn);
    }

    /// Every request so far, in arrival order.
    pub(crate) fn requests(&self) -> Vec<CapturedRequest> {
        self.lock().requests.clone()
    }

    /// Every violation so far.
    pub(crate) fn violations(&self) -> Vec<Violation> {
        self.lock().violations.clone()
    }

    /// Turns still queued.
    pub(crate) fn remaining_turns(&self) -> usize {
        self.lock().turns.len()
    }
}
