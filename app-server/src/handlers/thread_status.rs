//! A thread's status as a listing shows it: loaded here, running on another server that
//! shares the thread store, or only recorded.

use keel_protocol::ConversationId;
use keel_protocol::app_server::ThreadStatus;

use crate::state::AppState;

/// Each thread's status, in order: its own when loaded here; `active` when a turn runs on
/// another server sharing the catalog; else `notLoaded`.
pub(crate) async fn statuses(state: &AppState, ids: Vec<ConversationId>) -> Vec<ThreadStatus> {
    let mut statuses = Vec::with_capacity(ids.len());
    let mut not_loaded = Vec::new();
    for id in &ids {
        let status = match state.loaded(*id).await {
            Some(thread) => thread.status(),
            None => {
                not_loaded.push(*id);
                ThreadStatus::NotLoaded
            }
        };
        statuses.push(status);
    }
    let running = match state.catalog.running_elsewhere(not_loaded).await {
        Ok(running) => running,
        Err(err) => {
            tracing::warn!("could not tell which threads run on other servers: {err}");
            return statuses;
        }
    };
    for (id, status) in ids.iter().zip(statuses.iter_mut()) {
        if *status == ThreadStatus::NotLoaded && running.contains(id) {
            *status = ThreadStatus::Active {
                active_flags: Vec::new(),
            };
        }
    }
    statuses
}
