//! The operations that start turns or add to the running one: the user's input, a turn that
//! must run alone (a compaction, a review), the user's own command, a goal change, and items
//! a client injects.

use std::sync::Arc;
use std::time::Duration;

use keel_protocol::{
    EventMsg, InputItem, SubmissionId, ThreadGoalMutationOrigin, ThreadGoalUpdatedEvent,
};

use super::super::Session;
use super::super::input_items::user_input_items;
use super::super::task::{TurnTask, continue_goal, start_turn};
use crate::goals::user_change_note;
use crate::models::ResponseItem;
use crate::turn_context::TurnIds;

/// How long a user's command may run when the client names no limit.
const DEFAULT_USER_SHELL_TIMEOUT: Duration = Duration::from_secs(3600);

/// `Op::UserInput`: a new turn, or more input for the running one (sent with its next
/// request); refused with a warning while a review runs alone.
pub(crate) fn start_or_join_turn(
    session: &Arc<Session>,
    sub_id: SubmissionId,
    items: Vec<InputItem>,
) {
    {
        let mut state = session.state();
        if state.active_turn.is_some() && state.review_parent_history.is_some() {
            // A reviewer works alone: input meant for the conversation waits for the next turn.
            drop(state);
            let session = session.clone();
            tokio::spawn(async move {
                let message =
                    "a review is running; send this after it ends, or interrupt it".to_string();
                session
                    .send_event(
                        &sub_id,
                        EventMsg::Warning(keel_protocol::WarningEvent { message }),
                    )
                    .await;
            });
            return;
        }
        if state.active_turn.is_some() {
            // Input while a turn runs joins that turn: it is sent with the next model request.
            let cwd = state.turn_context.cwd.clone();
            state.pending_input.extend(user_input_items(&cwd, &items));
            drop(state);
            session.note_input_arrived();
            return;
        }
    }
    start_turn(session, sub_id, TurnTask::UserInput(items));
}

/// A turn that must run alone (a compaction, a review): refused, with `doing` named in the
/// error, while another turn runs.
pub(crate) async fn start_alone(
    session: &Arc<Session>,
    sub_id: SubmissionId,
    task: TurnTask,
    doing: &str,
) {
    if session.state().active_turn.is_some() {
        let message =
            format!("cannot {doing} while a turn is running; interrupt it or wait for it to end");
        session
            .send_event(
                &sub_id,
                EventMsg::Error(keel_protocol::ErrorEvent::new(message)),
            )
            .await;
        return;
    }
    start_turn(session, sub_id, task);
}

/// `Op::InjectItems`: items a client checked (`keel_core::injectable_item`) join the history:
/// with the running turn's next request, or before the next turn.
pub(crate) async fn inject_items(session: &Arc<Session>, items: Vec<serde_json::Value>) {
    let items: Vec<ResponseItem> = items
        .into_iter()
        .filter_map(|value| match crate::models::injectable_item(value) {
            Ok(item) => Some(item),
            Err(err) => {
                tracing::warn!(conversation = %session.id(), "injected item dropped: {err}");
                None
            }
        })
        .collect();
    let running = session.state().active_turn.is_some();
    if running {
        for item in items {
            session.queue_input(item);
        }
        session.note_input_arrived();
    } else {
        session.record_items(&items).await;
    }
}

/// `Op::GoalChanged`: tells the client, notes a person's change for the model, and starts
/// working when the goal is active and nothing runs.
pub(crate) async fn goal_changed(
    session: &Arc<Session>,
    sub_id: SubmissionId,
    origin: Option<ThreadGoalMutationOrigin>,
) {
    let goal = session.goals().get();
    let msg = match &goal {
        Some(goal) => EventMsg::ThreadGoalUpdated(ThreadGoalUpdatedEvent {
            turn_id: None,
            goal: goal.clone(),
        }),
        None => EventMsg::ThreadGoalCleared,
    };
    session.send_event(&sub_id, msg).await;
    if let Some(note) = user_change_note(origin, goal.as_ref()) {
        let running = session.state().active_turn.is_some();
        if running {
            session.queue_input(note);
        } else {
            session.record_items(&[note]).await;
        }
    }
    continue_goal(session, sub_id);
}

/// Starts the command: a turn of its own, or beside the running turn.
pub(crate) fn run_user_shell_command(
    session: &Arc<Session>,
    sub_id: SubmissionId,
    command: String,
    timeout_ms: Option<u64>,
) {
    let timeout = timeout_ms.map_or(DEFAULT_USER_SHELL_TIMEOUT, Duration::from_millis);
    let running = session
        .state()
        .active_turn
        .as_ref()
        .map(|turn| (turn.sub_id.clone(), turn.cancel.clone()));
    let Some((turn_sub, cancel)) = running else {
        start_turn(session, sub_id, TurnTask::UserShell { command, timeout });
        return;
    };
    let session = session.clone();
    tokio::spawn(async move {
        let ids = TurnIds::starting(turn_sub, None);
        // The running turn's model sees it with its next request.
        if let Ok(note) =
            super::super::user_shell::run(&session, &ids, &cancel, &command, timeout).await
        {
            session.queue_input(note);
        }
    });
}
