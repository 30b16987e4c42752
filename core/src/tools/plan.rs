//! The `update_plan` tool: the model records its plan; clients show it.

use keel_protocol::{EventMsg, UpdatePlanArgs};

use super::ToolContext;

super::builtin_tool!(
    /// `update_plan`: the model's step-by-step plan, shown to the user.
    UpdatePlanTool,
    "update_plan",
    super::spec::update_plan_tool(),
    |call, _call_id, arguments| Ok(update_plan(call, arguments).await)
);

/// Emits `plan_update` and acknowledges; bad arguments are reported to the model.
async fn update_plan(ctx: &ToolContext, arguments: &str) -> String {
    match serde_json::from_str::<UpdatePlanArgs>(arguments) {
        Ok(plan) => {
            ctx.host
                .send_event(&ctx.ids.sub_id, EventMsg::PlanUpdate(plan))
                .await;
            "Plan updated".to_string()
        }
        Err(err) => format!("failed to parse update_plan arguments: {err}"),
    }
}
