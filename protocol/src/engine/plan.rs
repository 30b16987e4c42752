//! The agent's plan, as the `update_plan` tool reports it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Progress of one plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanItem {
    /// What the step does.
    pub step: String,
    /// How far along it is.
    pub status: StepStatus,
}

/// The arguments of `update_plan`, and the payload of the `plan_update` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UpdatePlanArgs {
    /// Why the plan changed, if the model said.
    #[serde(default)]
    pub explanation: Option<String>,
    /// The whole plan, in order.
    pub plan: Vec<PlanItem>,
}
