//! A conversation's status as its parent sees it, derived from the events it sends.

use std::sync::Mutex;

use keel_protocol::{CollabAgentState, CollabAgentStatus, EventMsg, SubmissionId};
use tokio::sync::watch;

/// The status channel and the submission whose turn it describes.
pub(crate) struct StatusTracker {
    status: std::sync::Arc<watch::Sender<CollabAgentState>>,
    /// The running turn's submission: only its end, or its error, moves the status on (an
    /// error answering another submission, such as a refused compaction, does not).
    running: Mutex<Option<SubmissionId>>,
}

impl StatusTracker {
    pub(crate) fn new(status: std::sync::Arc<watch::Sender<CollabAgentState>>) -> Self {
        Self {
            status,
            running: Mutex::new(None),
        }
    }

    /// Moves the status on for an event the conversation is sending for submission `sub_id`.
    pub(crate) fn track(&self, sub_id: &SubmissionId, msg: &EventMsg) {
        // Called for every event: the ones that cannot move the status cost no lock.
        if !matches!(
            msg,
            EventMsg::TaskStarted(_)
                | EventMsg::TaskComplete(_)
                | EventMsg::TurnAborted(_)
                | EventMsg::Error(_)
                | EventMsg::ShutdownComplete
        ) {
            return;
        }
        let mut running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ends_running_turn = running.as_ref() == Some(sub_id);
        let next = match msg {
            EventMsg::TaskStarted(_) => {
                *running = Some(sub_id.clone());
                CollabAgentState::new(CollabAgentStatus::Running)
            }
            EventMsg::TaskComplete(done) if ends_running_turn => CollabAgentState {
                status: CollabAgentStatus::Completed,
                message: done.last_agent_message.clone(),
            },
            EventMsg::TurnAborted(_) if ends_running_turn => {
                CollabAgentState::new(CollabAgentStatus::Interrupted)
            }
            EventMsg::Error(error) if ends_running_turn => CollabAgentState {
                status: CollabAgentStatus::Errored,
                message: Some(error.message.clone()),
            },
            EventMsg::ShutdownComplete => CollabAgentState::new(CollabAgentStatus::Shutdown),
            _ => return,
        };
        if !matches!(msg, EventMsg::TaskStarted(_)) {
            *running = None;
        }
        self.status.send_replace(next);
    }
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

#[cfg(test)]
mod tests {
    use keel_protocol::{ErrorEvent, TaskCompleteEvent, TaskStartedEvent, TurnId};

    use super::*;

    fn started() -> EventMsg {
        EventMsg::TaskStarted(TaskStartedEvent {
            turn_id: TurnId::new("t"),
            model_context_window: None,
            started_at: None,
        })
    }

    #[test]
    fn only_the_running_turns_own_end_moves_the_status() {
        let status = std::sync::Arc::new(watch::Sender::new(CollabAgentState::new(
            CollabAgentStatus::PendingInit,
        )));
        let tracker = StatusTracker::new(status.clone());
        let turn = SubmissionId::new("1");
        let other = SubmissionId::new("2");
        tracker.track(&turn, &started());
        assert_eq!(status.borrow().status, CollabAgentStatus::Running);
        // A refused operation (another submission) errors while the turn runs: no change.
        let refused = EventMsg::Error(ErrorEvent::new("cannot compact while a turn is running"));
        tracker.track(&other, &refused);
        assert_eq!(status.borrow().status, CollabAgentStatus::Running);
        tracker.track(
            &turn,
            &EventMsg::TaskComplete(TaskCompleteEvent {
                turn_id: TurnId::new("t"),
                last_agent_message: Some("done".to_string()),
                completed_at: None,
                duration_ms: None,
            }),
        );
        assert_eq!(
            *status.borrow(),
            CollabAgentState {
                status: CollabAgentStatus::Completed,
                message: Some("done".to_string())
            }
        );
        // An error between turns does not make a finished agent look failed.
        tracker.track(&other, &refused);
        assert_eq!(status.borrow().status, CollabAgentStatus::Completed);
        tracker.track(&other, &EventMsg::ShutdownComplete);
        assert_eq!(status.borrow().status, CollabAgentStatus::Shutdown);
    }
}
