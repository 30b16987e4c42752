//! The `update_plan` tool: the model records its plan; clients show it.

use keel_protocol::{EventMsg, UpdatePlanArgs};

use super::ToolContext;
use super::builtin::BuiltinTool;
use crate::turn_context::TurnStop;

/// `update_plan`: the model's step-by-step plan, shown to the user.
pub(crate) struct UpdatePlanTool;

impl BuiltinTool for UpdatePlanTool {
    type Args = UpdatePlanArgs;
    const NAME: &'static str = "update_plan";

    fn description(&self) -> &'static str {
        "Record the plan for the task as a list of steps with a status each \
            (pending, in_progress, completed). At most one step is in_progress. Call it again \
            whenever a step changes status; the user sees the plan."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "explanation": {"type": "string"},
                "plan": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        })
    }

    async fn run(&self, ctx: &ToolContext, args: UpdatePlanArgs) -> Result<String, TurnStop> {
        Ok(update_plan(ctx, args).await)
    }
}

/// Emits `plan_update` and acknowledges.
async fn update_plan(ctx: &ToolContext, plan: UpdatePlanArgs) -> String {
    ctx.host
        .send_event(&ctx.ids.sub_id, EventMsg::PlanUpdate(plan))
        .await;
    "Plan updated".to_string()
}
