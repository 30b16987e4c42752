//! `get_goal`, `create_goal` and `update_goal`: the model reads the thread's goal, sets one
//! when asked to, and says when it is complete, blocked or paused.

use keel_protocol::{EventMsg, ThreadGoal, ThreadGoalStatus, ThreadGoalUpdatedEvent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::ToolContext;
use super::builtin::BuiltinTool;
use crate::turn_context::TurnStop;

/// `get_goal`: the thread's goal and what is left of its budget.
pub(crate) struct GetGoalTool;

/// `create_goal`: a goal the user asked the model to set.
pub(crate) struct CreateGoalTool;

/// `update_goal`: the model marks the goal complete, blocked or paused.
pub(crate) struct UpdateGoalTool;

// `get_goal` takes nothing (whatever is sent is ignored, as before).
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct GetArgs {}

#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields, transform = no_null_defaults)]
pub(crate) struct CreateArgs {
    objective: String,
    #[serde(default)]
    #[schemars(schema_with = "plain_integer")]
    token_budget: Option<i64>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct UpdateArgs {
    // A string, so an unknown status gets an answer saying what may be set.
    #[schemars(schema_with = "settable_status")]
    status: String,
}

fn plain_integer(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer"})
}

/// The model is told a field is optional by its absence from `required`, not by a `null`
/// default.
fn no_null_defaults(schema: &mut schemars::Schema) {
    let properties = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut);
    for property in properties.into_iter().flat_map(|map| map.values_mut()) {
        if let Some(property) = property.as_object_mut()
            && property.get("default") == Some(&serde_json::Value::Null)
        {
            property.remove("default");
        }
    }
}

fn settable_status(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["complete", "blocked", "paused"]})
}

impl BuiltinTool for GetGoalTool {
    type Args = GetArgs;
    const NAME: &'static str = "get_goal";

    fn description(&self) -> &'static str {
        "Read the thread's goal: its objective, status, token budget and the tokens and time \
         spent on it."
    }

    async fn run(&self, ctx: &ToolContext, _args: GetArgs) -> Result<String, TurnStop> {
        Ok(get_goal(ctx))
    }
}

impl BuiltinTool for CreateGoalTool {
    type Args = CreateArgs;
    const NAME: &'static str = "create_goal";

    fn description(&self) -> &'static str {
        "Set a goal for this thread, which keeps you working on it across turns until it is \
         complete. Only when the user asks for a goal to be set; give a token budget only if \
         they asked for one. Refused while an unfinished goal exists."
    }

    async fn run(&self, ctx: &ToolContext, args: CreateArgs) -> Result<String, TurnStop> {
        Ok(create_goal(ctx, args).await)
    }
}

impl BuiltinTool for UpdateGoalTool {
    type Args = UpdateArgs;
    const NAME: &'static str = "update_goal";

    fn description(&self) -> &'static str {
        "Say where the thread's goal stands: \"complete\" once every part of it is achieved and \
         checked; \"blocked\" when you cannot go on without something only the user can \
         provide; \"paused\" only when the user asks to pause. No further turns start on their \
         own after any of these."
    }

    async fn run(&self, ctx: &ToolContext, args: UpdateArgs) -> Result<String, TurnStop> {
        Ok(update_goal(ctx, args).await)
    }
}

/// What a goal tool answers: the goal and what is left of its budget.
fn report(goal: &ThreadGoal) -> String {
    let remaining = goal
        .token_budget
        .map(|budget| (budget - goal.tokens_used).max(0));
    json!({"goal": goal, "remainingTokens": remaining}).to_string()
}

fn get_goal(ctx: &ToolContext) -> String {
    match ctx.host.goals().get() {
        Some(goal) => report(&goal),
        None => "This thread has no goal.".to_string(),
    }
}

async fn create_goal(ctx: &ToolContext, args: CreateArgs) -> String {
    match ctx.host.goals().create(&args.objective, args.token_budget) {
        Ok(goal) => {
            goal_updated(ctx, goal.clone()).await;
            report(&goal)
        }
        Err(err) => err.to_string(),
    }
}

async fn update_goal(ctx: &ToolContext, args: UpdateArgs) -> String {
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
