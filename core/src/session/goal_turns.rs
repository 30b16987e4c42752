//! The engine's side of a thread goal: recording changes, counting a response's tokens
//! against the budget, and starting the next turn of work while the goal is active.

use std::sync::Arc;

use keel_protocol::{
    EventMsg, SubmissionId, ThreadGoalMutationOrigin, ThreadGoalStatus, ThreadGoalUpdatedEvent,
    TokenUsage,
};

use super::Session;
use crate::goals::{budget_reached_message, user_change_note};
use crate::turn_context::TurnIds;

/// `Op::GoalChanged`: tells the client, notes a person's change for the model, and starts
/// working when the goal is active and nothing runs.
pub(super) async fn goal_changed(
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

/// Starts a turn toward the goal when it is active and no turn runs.
pub(super) fn continue_goal(session: &Arc<Session>, sub_id: SubmissionId) {
    if !session.goals().is_active() || session.state().active_turn.is_some() {
        return;
    }
    // A turn id of its own: the submission that changed the goal is not this turn.
    let turn_sub = SubmissionId::new(format!("goal-{}", uuid::Uuid::now_v7()));
    tracing::debug!(conversation = %session.id(), after = %sub_id, "goal turn {turn_sub}");
    super::submission_loop::start_turn(session, turn_sub, super::turn::TurnTask::GoalContinuation);
}

/// Counts a model response against an active goal; when it spends the budget, the model is
/// told to wrap up in this turn.
pub(super) async fn account_response(session: &Session, ids: &TurnIds, usage: &TokenUsage) {
    let fresh_input = usage.input_tokens.saturating_sub(usage.cached_input_tokens);
    let tokens = i64::try_from(fresh_input.saturating_add(usage.output_tokens)).unwrap_or(i64::MAX);
    let Some((goal, spent)) = session.goals().account(tokens) else {
        return;
    };
    if spent {
        session.queue_input(budget_reached_message(&goal));
    }
    session
        .send_event(
            &ids.sub_id,
            EventMsg::ThreadGoalUpdated(ThreadGoalUpdatedEvent {
                turn_id: Some(ids.turn_id.to_string()),
                goal,
            }),
        )
        .await;
}

/// A turn failed: an active goal stops (`usageLimited` on the provider's usage limit, else
/// `blocked`) rather than fail again turn after turn.
pub(super) async fn turn_failed(session: &Session, ids: &TurnIds, usage_limit: bool) {
    let status = if usage_limit {
        ThreadGoalStatus::UsageLimited
    } else {
        ThreadGoalStatus::Blocked
    };
    if let Some(goal) = session.goals().stop_if_active(status) {
        session
            .send_event(
                &ids.sub_id,
                EventMsg::ThreadGoalUpdated(ThreadGoalUpdatedEvent {
                    turn_id: Some(ids.turn_id.to_string()),
                    goal,
                }),
            )
            .await;
    }
}
