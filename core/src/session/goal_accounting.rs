//! A thread goal's accounting during a turn: a response's tokens counted against the budget,
//! and an active goal stopped when a turn fails.

use keel_protocol::{EventMsg, ThreadGoalStatus, ThreadGoalUpdatedEvent, TokenUsage};

use super::Session;
use crate::goals::budget_reached_message;
use crate::turn_context::TurnIds;

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
