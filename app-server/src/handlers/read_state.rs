//! `thread/readState/update`: a person marks a thread read or unread; every client following
//! the thread hears of it before the answer.

use keel_protocol::app_server::{ThreadReadStateUpdateParams, ThreadReadStateUpdateResponse};

use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

/// Checks the thread has a read state (recorded, with a turn), then applies the operation.
pub(crate) async fn update(
    state: &AppState,
    params: ThreadReadStateUpdateParams,
) -> Result<ThreadReadStateUpdateResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    let loaded = state.loaded(id).await;
    let has_read_state = match &loaded {
        Some(thread) => !thread.meta().ephemeral && thread.has_turns(),
        None => match state.catalog.find(id, false).await? {
            Some(summary) => summary.has_turns,
            None => {
                return Err(AppServerError::InvalidRequest(format!(
                    "no thread with id {id}"
                )));
            }
        },
    };
    if !has_read_state {
        return Err(AppServerError::InvalidRequest(format!(
            "thread read state unavailable: thread {id} is ephemeral or has no turns yet"
        )));
    }
    let read_state = state
        .read_states
        .update(id, params.operation, params.expected_revision)
        .await?;
    if let Some(thread) = loaded {
        thread.broadcast_read_state(read_state.clone()).await;
    }
    Ok(ThreadReadStateUpdateResponse { read_state })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadReadStateUpdate, |ctx, p| Reply::now(
    &update(ctx.state, p).await?
));
