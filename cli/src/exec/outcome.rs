//! Decides when `keel exec` is done: on `turn/completed` for its own thread and turn only
//! (completions of other threads, such as sub-agents, and of other turns are ignored).

use keel_protocol::app_server::{ServerNotification, TurnStatus};

/// How `keel exec`'s turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The model finished; carries its last message, if any.
    Completed(Option<String>),
    /// The turn was interrupted.
    Interrupted,
    /// The turn failed with this message.
    Failed(String),
}

impl TurnOutcome {
    /// The process exit code for this outcome.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Completed(_) => 0,
            Self::Interrupted | Self::Failed(_) => 1,
        }
    }
}

/// `Some` when `notification` ends the turn `turn_id` of thread `thread_id`.
pub fn turn_outcome(
    notification: &ServerNotification,
    thread_id: &str,
    turn_id: &str,
) -> Option<TurnOutcome> {
    let ServerNotification::TurnCompleted(done) = notification else {
        return None;
    };
    if done.thread_id != thread_id || done.turn.id != turn_id {
        return None;
    }
    Some(match done.turn.status {
        TurnStatus::Completed => {
            TurnOutcome::Completed(done.turn.items.iter().rev().find_map(|item| match item {
                keel_protocol::app_server::ThreadItem::AgentMessage { text, .. } => {
                    Some(text.clone())
                }
                _ => None,
            }))
        }
        TurnStatus::Interrupted => TurnOutcome::Interrupted,
        TurnStatus::Failed => TurnOutcome::Failed(
            done.turn
                .error
                .as_ref()
                .map_or_else(|| "the turn failed".to_string(), |e| e.message.clone()),
        ),
        // A completion notification never carries an in-progress turn; treat it as a failure
        // rather than wait forever.
        TurnStatus::InProgress => TurnOutcome::Failed("the turn was reported in progress".into()),
    })
}

#[cfg(test)]
mod tests {
    use keel_protocol::app_server::{ThreadItem, Turn, TurnError, TurnNotification};
    use pretty_assertions::assert_eq;

    use super::*;

    fn completed(thread: &str, turn: &str, status: TurnStatus) -> ServerNotification {
        ServerNotification::TurnCompleted(TurnNotification {
            thread_id: thread.into(),
            turn: Turn {
                id: turn.into(),
                items: vec![ThreadItem::AgentMessage {
                    id: "m".into(),
                    text: "final".into(),
                    phase: None,
                    delivery: None,
                    questions: None,
                }],
                status,
                error: (status == TurnStatus::Failed).then(|| TurnError {
                    message: "boom".into(),
                    additional_details: None,
                    codex_error_info: None,
                }),
                started_at: None,
                completed_at: None,
                duration_ms: None,
                plan: None,
                token_usage: None,
            },
        })
    }

    #[test]
    fn own_turn_statuses() {
        assert_eq!(
            turn_outcome(&completed("t", "1", TurnStatus::Completed), "t", "1"),
            Some(TurnOutcome::Completed(Some("final".into())))
        );
        assert_eq!(
            turn_outcome(&completed("t", "1", TurnStatus::Interrupted), "t", "1"),
            Some(TurnOutcome::Interrupted)
        );
        assert_eq!(
            turn_outcome(&completed("t", "1", TurnStatus::Failed), "t", "1"),
            Some(TurnOutcome::Failed("boom".into()))
        );
        assert_eq!(TurnOutcome::Completed(None).exit_code(), 0);
        assert_eq!(TurnOutcome::Interrupted.exit_code(), 1);
        assert_eq!(TurnOutcome::Failed(String::new()).exit_code(), 1);
    }

    #[test]
    fn other_threads_and_turns_are_ignored() {
        assert_eq!(
            turn_outcome(
                &completed("sub-agent", "1", TurnStatus::Completed),
                "t",
                "1"
            ),
            None
        );
        assert_eq!(
            turn_outcome(&completed("t", "2", TurnStatus::Failed), "t", "1"),
            None
        );
    }

    #[test]
    fn other_notifications_are_ignored() {
        let started = ServerNotification::TurnStarted(TurnNotification {
            thread_id: "t".into(),
            turn: Turn {
                id: "1".into(),
                items: Vec::new(),
                status: TurnStatus::InProgress,
                error: None,
                started_at: None,
                completed_at: None,
                duration_ms: None,
                plan: None,
                token_usage: None,
            },
        });
        assert_eq!(turn_outcome(&started, "t", "1"), None);
    }
}
