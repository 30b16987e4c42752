//! Turns and the `turn/*` methods.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{SandboxPolicyV2, ThreadItem, UserInput};
use crate::{AskForApproval, ReasoningEffort};

/// How a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    /// The model answered without further tool calls.
    Completed,
    /// The client interrupted it (or declined with `cancel`).
    Interrupted,
    /// It ended with an error.
    Failed,
    /// Still running.
    InProgress,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// What went wrong.
    pub message: String,
    /// More detail, when there is any.
    #[serde(default)]
    pub additional_details: Option<String>,
    /// What kind of failure it was, when the engine knows.
    #[serde(default)]
    pub codex_error_info: Option<crate::CodexErrorInfo>,
}

/// One turn: the user's input and everything done for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Turn id.
    pub id: String,
    /// Its items (complete in `turn/completed` and `thread/read`; empty when just started).
    pub items: Vec<ThreadItem>,
    /// How it stands.
    pub status: TurnStatus,
    /// Why it failed, when it did.
    pub error: Option<TurnError>,
    /// When it started, Unix seconds (`null` when not recorded).
    #[serde(default)]
    pub started_at: Option<i64>,
    /// When it ended, Unix seconds (`null` while running or when not recorded).
    #[serde(default)]
    pub completed_at: Option<i64>,
    /// How long it ran, in milliseconds, once ended and when recorded.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// Keel addition: the plan as the turn last set it (`turn/plan/updated` happens live
    /// only), so a client redrawing a recorded thread can show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<TurnPlan>,
    /// Keel addition: the token usage as last reported during the turn
    /// (`thread/tokenUsage/updated` happens live only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<super::ThreadTokenUsage>,
}

/// A plan as `turn/plan/updated` carries it, kept with the turn that set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlan {
    /// Why the plan last changed.
    #[serde(default)]
    pub explanation: Option<String>,
    /// The whole plan.
    pub plan: Vec<TurnPlanStep>,
}

/// One step of `turn/plan/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnPlanStep {
    /// The step.
    pub step: String,
    /// `pending`, `inProgress` or `completed`.
    pub status: TurnPlanStepStatus,
}

/// Progress of a plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnPlanStepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl Turn {
    /// A turn that has just been accepted: running, no items yet, `started_at` when known.
    pub fn in_progress(id: impl Into<String>, started_at: Option<i64>) -> Self {
        Self {
            id: id.into(),
            items: Vec::new(),
            status: TurnStatus::InProgress,
            error: None,
            started_at,
            completed_at: None,
            duration_ms: None,
            plan: None,
            token_usage: None,
        }
    }
}

/// Params of `turn/start` (`..Default::default()` keeps a caller building it compiling as
/// fields are added).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread.
    pub thread_id: String,
    /// The user's input.
    pub input: Vec<UserInput>,
    /// New working directory, from this turn on.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// New approval policy, from this turn on.
    #[serde(default)]
    pub approval_policy: Option<AskForApproval>,
    /// New sandbox, from this turn on.
    #[serde(default)]
    pub sandbox_policy: Option<SandboxPolicyV2>,
    /// New sandbox, as a permission profile id (see `permissionProfile/list`), from this
    /// turn on; not with `sandboxPolicy`.
    #[serde(default)]
    pub permissions: Option<String>,
    /// New model, from this turn on.
    #[serde(default)]
    pub model: Option<String>,
    /// New reasoning effort, from this turn on.
    #[serde(default)]
    pub effort: Option<ReasoningEffort>,
    /// A JSON Schema the turn's final answer must match (sent to the model as the
    /// response format; Codex clients use it for thread titles).
    #[serde(default)]
    pub output_schema: Option<serde_json::Value>,
    /// The collaboration mode from this turn on (`default` or `plan`; Codex 0.169,
    /// experimental).
    #[serde(default)]
    pub collaboration_mode: Option<super::CollaborationMode>,
    /// The environment the turn runs in (Codex 0.169, experimental). Keel keeps a thread in
    /// the environment it started in: naming another one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<super::TurnEnvironmentParams>>,
}

/// Result of `turn/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStartResponse {
    /// The new turn (in progress, no items yet).
    pub turn: Turn,
}

/// Params of `turn/steer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams {
    /// The thread.
    pub thread_id: String,
    /// The turn the client believes is running.
    pub expected_turn_id: String,
    /// Input to add to it.
    pub input: Vec<UserInput>,
}

/// Result of `turn/steer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResponse {
    /// The turn the input joined.
    pub turn_id: String,
}

/// Params of `turn/interrupt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The running turn.
    pub turn_id: String,
}
