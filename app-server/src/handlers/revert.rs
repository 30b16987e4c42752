//! `thread/revert`: drop a turn and every later one, and with `restoreFiles` (Keel's
//! addition) put the workspace's files back as they were before it.

use std::sync::Arc;

use keel_protocol::Op;
use keel_protocol::app_server::{
    ServerNotification, ThreadIdNotification, ThreadRevertParams, ThreadRevertResponse,
};

use super::Reply;
use super::loaded::loaded;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// Files first (all or nothing), then the turns; `thread/reverted` follows the answer.
pub(crate) async fn revert(
    state: &AppState,
    params: ThreadRevertParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    if let Some(running) = thread.active_turn_id() {
        return Err(AppServerError::InvalidRequest(format!(
            "turn {running} is running; interrupt it before reverting"
        )));
    }
    let mut turns = thread.turns();
    let Some(index) = turns.iter().position(|t| t.id == params.before_turn_id) else {
        return Err(AppServerError::InvalidParams {
            method: "thread/revert".into(),
            message: format!(
                "turn {} is not a turn of thread {}",
                params.before_turn_id, params.thread_id
            ),
        });
    };
    let restored_files = if params.restore_files {
        let dir = keel_core::checkpoints::checkpoint_dir(state.keel_home(), &thread.id.to_string());
        let dropped: Vec<String> = turns[index..].iter().map(|t| t.id.clone()).collect();
        tokio::task::spawn_blocking(move || keel_core::checkpoints::restore_before(&dir, &dropped))
            .await
            .map_err(|err| AppServerError::Internal(format!("restoring files: {err}")))?
            .map_err(|err| AppServerError::InvalidRequest(err.to_string()))?
    } else {
        Vec::new()
    };
    let num_turns = u32::try_from(turns.len() - index).unwrap_or(u32::MAX);
    thread
        .conversation
        .submit(Op::ThreadRollback { num_turns })
        .await?;
    turns.truncate(index);
    thread.set_turns(turns);
    // What was unread went with the dropped turns.
    let read_states = thread.read_states();
    let id = thread.id;
    if read_states.get(id).await.first_unread.is_some() {
        let cleared = read_states.reverted(id).await?;
        thread.broadcast_read_state(cleared).await;
    }
    let response = ThreadRevertResponse {
        thread: thread.to_thread(true),
        items_backwards_cursor: None,
        turns_backwards_cursor: None,
        restored_files,
    };
    Reply::then_notify(
        &response,
        outgoing,
        ServerNotification::ThreadReverted(ThreadIdNotification {
            thread_id: params.thread_id,
        }),
    )
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadRevert, |ctx, p| revert(ctx.state, p, ctx.outgoing())
    .await);
