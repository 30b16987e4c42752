//! The loaded thread a request names, and a turn's claim on it until the engine has the turn.

use std::sync::Arc;

use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};
use crate::threads::LoadedThread;

/// The loaded thread a request names, or an error telling the client to load it first.
pub(crate) async fn loaded(state: &AppState, thread_id: &str) -> Result<Arc<LoadedThread>> {
    let id = parse_thread_id(thread_id)?;
    state.loaded(id).await.ok_or_else(|| {
        AppServerError::InvalidRequest(format!(
            "thread {id} is not loaded; call thread/start or thread/resume first"
        ))
    })
}

/// A `turn/start` claim not yet handed to the engine; dropping it gives the claim up.
pub(crate) struct Claim {
    thread: Arc<LoadedThread>,
    turn_id: Option<String>,
}

impl Claim {
    /// Holds the claim of `turn_id` on `thread`.
    pub(crate) fn new(thread: Arc<LoadedThread>, turn_id: String) -> Self {
        Self {
            thread,
            turn_id: Some(turn_id),
        }
    }

    /// The engine has the turn: the claim is its to end.
    pub(crate) fn submitted(&mut self) {
        self.turn_id = None;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(turn_id) = &self.turn_id {
            self.thread.release_claim(turn_id);
        }
    }
}
