//! What a thread runs its next turns with, and how a client changes it between turns
//! (`thread/settings/update`, `thread/settings/updated`, `permissionProfile/list`; Codex 0.169,
//! where the TUI's model and permission pickers use them).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ApprovalsReviewer, CollaborationMode, SandboxPolicyV2};
use crate::{AskForApproval, ReasoningEffort};

/// The permission profiles Keel has built in: one per sandbox mode, by id.
pub const PERMISSION_PROFILES: [(&str, crate::SandboxMode); 3] = [
    (":read-only", crate::SandboxMode::ReadOnly),
    (":workspace", crate::SandboxMode::WorkspaceWrite),
    (":danger-full-access", crate::SandboxMode::DangerFullAccess),
];

/// Params of `thread/settings/update`: each given setting holds from the next turn on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSettingsUpdateParams {
    /// The thread.
    pub thread_id: String,
    /// New working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// New approval policy.
    #[serde(default)]
    pub approval_policy: Option<AskForApproval>,
    /// Who reviews approvals (only the user in Keel).
    #[serde(default)]
    pub approvals_reviewer: Option<ApprovalsReviewer>,
    /// New sandbox.
    #[serde(default)]
    pub sandbox_policy: Option<SandboxPolicyV2>,
    /// New sandbox, as a permission profile id (see `permissionProfile/list`).
    #[serde(default)]
    pub permissions: Option<String>,
    /// New model.
    #[serde(default)]
    pub model: Option<String>,
    /// New reasoning effort.
    #[serde(default)]
    pub effort: Option<ReasoningEffort>,
    /// The collaboration mode (`default` or `plan`); its model and effort apply.
    #[serde(default)]
    pub collaboration_mode: Option<CollaborationMode>,
    /// The environment later turns run in (Codex 0.169, experimental). Keel keeps a thread
    /// in the environment it started in: naming another one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<super::TurnEnvironmentParams>>,
}

/// The permission profile a thread runs under, when it was chosen by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ActivePermissionProfile {
    /// The profile id.
    pub id: String,
    /// The profile it extends (built-in profiles extend none).
    pub extends: Option<String>,
}

/// Everything a thread's next turn runs with (`thread/settings/updated`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnSettings {
    /// The working directory.
    pub cwd: PathBuf,
    /// The approval policy.
    pub approval_policy: AskForApproval,
    /// Who reviews approvals.
    pub approvals_reviewer: ApprovalsReviewer,
    /// The sandbox.
    pub sandbox_policy: SandboxPolicyV2,
    /// The permission profile, when the sandbox was chosen by one.
    pub active_permission_profile: Option<ActivePermissionProfile>,
    /// The model.
    pub model: String,
    /// The provider id.
    pub model_provider: String,
    /// The reasoning effort, when set.
    pub effort: Option<ReasoningEffort>,
    /// The collaboration mode.
    pub collaboration_mode: CollaborationMode,
    /// Plugins turned off for the thread (Keel has none).
    pub disabled_plugin_ids: Vec<String>,
    /// The service tier (none in Keel).
    pub service_tier: Option<String>,
    /// The reasoning summary mode, when set for the thread (Keel takes it from config).
    pub summary: Option<Value>,
}

/// `thread/settings/updated`: a thread's settings changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSettingsUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its settings now.
    pub thread_settings: ThreadTurnSettings,
}

/// Params of `permissionProfile/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionProfileListParams {
    /// Where to resume listing.
    #[serde(default)]
    pub cursor: Option<String>,
    /// The directory the profiles are for.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// At most this many.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// One permission profile a client may offer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionProfileSummary {
    /// Its id, for `permissions` in `thread/start`, `turn/start` and `thread/settings/update`.
    pub id: String,
    /// What it allows, when described.
    pub description: Option<String>,
    /// Whether the configuration permits it.
    pub allowed: bool,
}

/// Result of `permissionProfile/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionProfileListResponse {
    /// The profiles.
    pub data: Vec<PermissionProfileSummary>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<String>,
}

/// Params of `thread/goal/get`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalGetParams {
    /// The thread.
    pub thread_id: String,
}

/// Result of `thread/goal/get`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalGetResponse {
    /// The goal, when the thread has one.
    pub goal: Option<crate::ThreadGoal>,
}

/// Params of `thread/goal/set`: creates the goal (an objective is needed) or edits it in
/// place; absent fields stay as they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalSetParams {
    /// The thread.
    pub thread_id: String,
    /// What to achieve (at most 4000 characters).
    #[serde(default)]
    pub objective: Option<String>,
    /// A new status.
    #[serde(default)]
    pub status: Option<crate::ThreadGoalStatus>,
    /// Tokens the goal may use; `null` removes the budget, absent keeps it.
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<i64>")]
    pub token_budget: Option<Option<i64>>,
    /// Who asks: a person's change is noted for the model.
    #[serde(default)]
    pub origin: Option<crate::ThreadGoalMutationOrigin>,
}

/// A field that is present (`Some(value)` or `Some(None)` for `null`); absent is `None`
/// through `default`.
fn present_or_null<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Result of `thread/goal/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalSetResponse {
    /// The goal now.
    pub goal: crate::ThreadGoal,
}

/// Params of `thread/goal/clear`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalClearParams {
    /// The thread.
    pub thread_id: String,
    /// Who asks: a person's change is noted for the model.
    #[serde(default)]
    pub origin: Option<crate::ThreadGoalMutationOrigin>,
}

/// Result of `thread/goal/clear`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadGoalClearResponse {
    /// Whether there was a goal to clear.
    pub cleared: bool,
}

/// `thread/goal/updated`: a thread's goal was set or changed, or its usage grew.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGoalUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn the change happened in, if one was running.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The goal now.
    pub goal: crate::ThreadGoal,
}

/// Params of `thread/backgroundTerminals/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadBackgroundTerminalsListParams {
    /// The thread.
    pub thread_id: String,
    /// Where to resume listing (the last `processId` returned).
    #[serde(default)]
    pub cursor: Option<String>,
    /// At most this many.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// A process the model left running in a thread (`exec_command`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadBackgroundTerminal {
    /// The command item that started it.
    pub item_id: String,
    /// Its session id (the command item's `processId`).
    pub process_id: String,
    /// The command line.
    pub command: String,
    /// Where it runs.
    pub cwd: PathBuf,
    /// The operating system's process id, when known (not through an exec-server).
    pub os_pid: Option<u32>,
    /// CPU use, when measured (Keel does not).
    pub cpu_percent: Option<f64>,
    /// Resident memory in KiB, when measured (Keel does not).
    pub rss_kb: Option<u64>,
}

/// Result of `thread/backgroundTerminals/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadBackgroundTerminalsListResponse {
    /// The processes, oldest first.
    pub data: Vec<ThreadBackgroundTerminal>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<String>,
}

/// Params of `thread/shellCommand`: the user's own command (a client's `!cmd`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadShellCommandParams {
    /// The thread whose working directory and sandbox it runs in.
    pub thread_id: String,
    /// The command line, run by the user's login shell.
    pub command: String,
    /// How long it may run, in milliseconds (default one hour).
    #[serde(default)]
    pub timeout_ms: Option<i64>,
}

/// Params of `thread/inject_items`: history for the model that no client shows (a side
/// conversation's ground rules, say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadInjectItemsParams {
    /// The thread.
    pub thread_id: String,
    /// Responses API items: `message`, `function_call`, `function_call_output`,
    /// `custom_tool_call`, `custom_tool_call_output`.
    pub items: Vec<Value>,
}
