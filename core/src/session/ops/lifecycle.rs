//! The operations that stop things: an interrupt, a rollback, closing background terminals,
//! and the conversation's shutdown.

use std::sync::Arc;

use keel_protocol::{EventMsg, SubmissionId};

use super::super::Session;
use crate::turn_context::TurnIds;

/// Drops the latest turns from history; refused while a turn runs.
pub(crate) async fn rollback(session: &Session, sub_id: &SubmissionId, num_turns: u32) {
    let refused = {
        let mut state = session.state();
        if state.active_turn.is_some() {
            true
        } else {
            let mut no_events = Vec::new();
            crate::rollout::drop_last_turns(&mut state.history, &mut no_events, num_turns);
            false
        }
    };
    let msg = if refused {
        EventMsg::Error(keel_protocol::ErrorEvent::new(
            "cannot roll back while a turn is running; interrupt it first",
        ))
    } else {
        session
            .persist(&[crate::rollout::RolloutItem::Rollback(num_turns)])
            .await;
        EventMsg::ThreadRolledBack(keel_protocol::ThreadRolledBackEvent { num_turns })
    };
    session.send_event(sub_id, msg).await;
}

/// `Op::Interrupt`: cancels the running turn (it winds down and says so).
pub(crate) fn interrupt(session: &Session) {
    if let Some(turn) = &session.state().active_turn {
        turn.cancel.cancel();
    }
}

/// Interrupts the running turn and waits for it to wind down.
pub(crate) async fn stop_turn(session: &Session) {
    let handle = {
        let mut state = session.state();
        if let Some(turn) = &state.active_turn {
            turn.cancel.cancel();
        }
        state.last_turn.take()
    };
    if let Some(handle) = handle
        && let Err(err) = handle.await
    {
        tracing::warn!("turn task failed while stopping: {err}");
    }
}

/// Ids for work a submission does outside any turn (closing terminals, shutting down).
fn outside_turn(sub_id: &SubmissionId) -> TurnIds {
    TurnIds::starting(sub_id.clone(), None)
}

/// `Op::CloseBackgroundTerminals`: on a task of its own, so a session busy in a call is killed
/// once the call lets go of it, and other submissions are not held up meanwhile.
pub(crate) fn close_background_terminals(
    session: &Arc<Session>,
    sub_id: SubmissionId,
    process_id: Option<String>,
) {
    let session = session.clone();
    tokio::spawn(async move {
        let ids = outside_turn(&sub_id);
        crate::tools::close_sessions(session.as_ref(), &ids, process_id.as_deref()).await;
    });
}

/// `Op::Shutdown`: stops the running turn, closes the sub-agents and every live process, runs
/// the `SessionEnd` hooks and says the shutdown is complete.
pub(crate) async fn shutdown(session: &Arc<Session>, sub_id: &SubmissionId) {
    stop_turn(session).await;
    session.agents().close_all().await;
    let ids = outside_turn(sub_id);
    super::super::hook_points::session_end(session, &ids).await;
    crate::tools::close_all_sessions(session.as_ref(), &ids).await;
    session.send_event(sub_id, EventMsg::ShutdownComplete).await;
}

/// Every client let go of the conversation: the running turn stops and the session ends.
pub(crate) async fn abandoned(session: &Arc<Session>) {
    stop_turn(session).await;
    let ids = outside_turn(&SubmissionId::new("session-end"));
    super::super::hook_points::session_end(session, &ids).await;
}
