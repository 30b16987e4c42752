//! `get_goal`, `create_goal` and `update_goal`: the model reads the thread's goal, sets one
//! when asked to, and says when it is complete, blocked or paused.

use keel_protocol::{EventMsg, ThreadGoal, ThreadGoalStatus, ThreadGoalUpdatedEvent};
use serde::Deserialize;
use serde_json::{Value, json};

use super::ToolContext;

super::builtin_tool!(
    /// `get_goal`: the thread's goal and what is left of its budget.
    GetGoalTool,
    "get_goal",
    get_goal_spec(),
    |call, _call_id, _arguments| Ok(get_goal(call))
);

super::builtin_tool!(
    /// `create_goal`: a goal the user asked the model to set.
    CreateGoalTool,
    "create_goal",
    create_goal_spec(),
    |call, _call_id, arguments| Ok(create_goal(call, arguments).await)
);

super::builtin_tool!(
    /// `update_goal`: the model marks the goal complete, blocked or paused.
    UpdateGoalTool,
    "update_goal",
    update_goal_spec(),
    |call, _call_id, arguments| Ok(update_goal(call, arguments).await)
);

fn get_goal_spec() -> Value {
    json!({
        "type": "function",
        "name": "get_goal",
        "description": "Read the thread's goal: its objective, status, token budget and the \
            tokens and time spent on it.",
        "strict": false,
        "parameters": {"type": "object", "properties": {}, "additionalProperties": false}
    })
}

fn create_goal_spec() -> Value {
    json!({
        "type": "function",
        "name": "create_goal",
        "description": "Set a goal for this thread, which keeps you working on it across \
            turns until it is complete. Only when the user asks for a goal to be set; give a \
            token budget only if they asked for one. Refused while an unfinished goal exists.",
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "objective": {"type": "string"},
                "token_budget": {"type": "integer"}
            },
            "required": ["objective"],
            "additionalProperties": false
        }
    })
}

fn update_goal_spec() -> Value {
    json!({
        "type": "function",
        "name": "update_goal",
        "description": "Say where the thread's goal stands: \"complete\" once every part of \
            it is achieved and checked; \"blocked\" when you cannot go on without something \
            only the user can provide; \"paused\" only when the user asks to pause. No further \
            turns start on their own after any of these.",
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["complete", "blocked", "paused"]}
            },
            "required": ["status"],
            "additionalProperties": false
        }
    })
}

/// What a goal tool answers: the goal and what is left of its budget.
fn report(goal: &ThreadGoal) -> String {
    let remaining = goal
        .token_budget
        .map(|budget| (budget - goal.tokens_used).max(0));
    json!({"goal": goal, "remainingTokens": remaining}).to_string()
}

#[derive(Deserialize)]
struct CreateArgs {
    objective: String,
    #[serde(default)]
    token_budget: Option<i64>,
}

#[derive(Deserialize)]
struct UpdateArgs {
    status: String,
}

fn get_goal(ctx: &ToolContext) -> String {
    match ctx.host.goals().get() {
        Some(goal) => report(&goal),
        None => "This thread has no goal.".to_string(),
    }
}

async fn create_goal(ctx: &ToolContext, arguments: &str) -> String {
    let args: CreateArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return format!("failed to parse create_goal arguments: {err}"),
    };
    match ctx.host.goals().create(&args.objective, args.token_budget) {
        Ok(goal) => {
            goal_updated(ctx, goal.clone()).await;
            report(&goal)
        }
        Err(err) => err.to_string(),
    }
}

async fn update_goal(ctx: &ToolContext, arguments: &str) -> String {
    let args: UpdateArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => return format!("failed to parse update_goal arguments: {err}"),
    };
    let status = match args.status.as_str() {
        "complete" => ThreadGoalStatus::Complete,
        "blocked" => ThreadGoalStatus::Blocked,
        "paused" => ThreadGoalStatus::Paused,
        other => {
            return format!(
                "update_goal sets \"complete\", \"blocked\" or \"paused\", not \"{other}\"; \
                 resuming a goal and its limits are the user's to set"
            );
        }
    };
    match ctx.host.goals().set_status(status) {
        Some(goal) => {
            goal_updated(ctx, goal.clone()).await;
            let mut answer = report(&goal);
            if status == ThreadGoalStatus::Complete {
                answer.push_str(&format!(
                    "\nThe goal is complete: tell the user what was achieved; it took {} \
                     tokens and {} s.",
                    goal.tokens_used, goal.time_used_seconds
                ));
            }
            answer
        }
        None => "This thread has no goal to update.".to_string(),
    }
}

async fn goal_updated(ctx: &ToolContext, goal: ThreadGoal) {
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::ThreadGoalUpdated(ThreadGoalUpdatedEvent {
                turn_id: Some(ctx.ids.turn_id.to_string()),
                goal,
            }),
        )
        .await;
}
