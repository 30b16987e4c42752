//! A conversation's status as its parent sees it, derived from the events it sends.

use keel_protocol::{CollabAgentState, CollabAgentStatus, EventMsg};
use tokio::sync::watch;

/// Moves `status` on for an event the conversation is sending.
pub(crate) fn track_status(status: &watch::Sender<CollabAgentState>, msg: &EventMsg) {
    let next = match msg {
        EventMsg::TaskStarted(_) => CollabAgentState::new(CollabAgentStatus::Running),
        EventMsg::TaskComplete(done) => CollabAgentState {
            status: CollabAgentStatus::Completed,
            message: done.last_agent_message.clone(),
        },
        EventMsg::TurnAborted(_) => CollabAgentState::new(CollabAgentStatus::Interrupted),
        // An error ends a turn only while one runs (a refused operation between turns does
        // not change where the agent stands).
        EventMsg::Error(error) if status.borrow().status == CollabAgentStatus::Running => {
            CollabAgentState {
                status: CollabAgentStatus::Errored,
                message: Some(error.message.clone()),
            }
        }
        EventMsg::ShutdownComplete => CollabAgentState::new(CollabAgentStatus::Shutdown),
        _ => return,
    };
    status.send_replace(next);
}

/// Returns once any of `receivers` shows a final status (or its conversation is gone); at
/// once when there are none.
pub(crate) async fn wait_any_final(receivers: Vec<watch::Receiver<CollabAgentState>>) {
    if receivers.is_empty() {
        return;
    }
    let waits = receivers.into_iter().map(|mut rx| {
        Box::pin(async move {
            // An error means the conversation is gone, which is final too.
            let _gone = rx.wait_for(|state| state.status.is_final()).await.is_err();
        })
    });
    futures::future::select_all(waits).await;
}
