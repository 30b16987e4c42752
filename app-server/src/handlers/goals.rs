//! `thread/goal/set` and `thread/goal/clear`: the engine records the change and, while the
//! goal is active, keeps the thread working.

use keel_core::goals::{GoalError, GoalUpdate};
use keel_protocol::app_server::{
    ThreadGoalClearParams, ThreadGoalClearResponse, ThreadGoalSetParams, ThreadGoalSetResponse,
};

use super::Reply;
use super::loaded::loaded;
use crate::error::{AppServerError, Result};
use crate::state::AppState;

fn refused(method: &str, err: &GoalError) -> AppServerError {
    AppServerError::InvalidParams {
        method: method.into(),
        message: err.to_string(),
    }
}

/// `thread/goal/set`: answers the goal; `thread/goal/updated` follows, then a turn when the
/// goal is active and the thread idle.
pub(crate) async fn set(state: &AppState, params: ThreadGoalSetParams) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    let update = GoalUpdate {
        objective: params.objective,
        status: params.status,
        token_budget: params.token_budget,
    };
    let goal = thread
        .conversation
        .set_goal(update, params.origin)
        .await
        .map_err(|err| refused("thread/goal/set", &err))?;
    Reply::now(&ThreadGoalSetResponse { goal })
}

/// `thread/goal/clear`: `{cleared}`; `thread/goal/cleared` follows when there was a goal.
pub(crate) async fn clear(state: &AppState, params: ThreadGoalClearParams) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    let cleared = thread.conversation.clear_goal(params.origin).await;
    Reply::now(&ThreadGoalClearResponse { cleared })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadGoalSet, |ctx, p| set(ctx.state, p).await);
handle!(ThreadGoalClear, |ctx, p| clear(ctx.state, p).await);
