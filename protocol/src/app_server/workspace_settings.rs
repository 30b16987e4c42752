//! Server-wide switches a client sets for the server's lifetime: extra skill roots, feature
//! enablement, and the Windows sandbox set-up (which only Windows has).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `skills/extraRoots/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsExtraRootsSetParams {
    /// Directories of skills (absolute), offered besides the configured ones; replaces the
    /// previous list.
    pub extra_roots: Vec<PathBuf>,
}

/// Params and result of `experimentalFeature/enablement/set`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentalFeatureEnablement {
    /// Feature name to on or off; the result keeps only the features that were set.
    pub enablement: BTreeMap<String, bool>,
}

/// How the Windows sandbox would be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WindowsSandboxSetupMode {
    /// With administrator rights.
    Elevated,
    /// Without.
    Unelevated,
}

/// Params of `windowsSandbox/setupStart`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowsSandboxSetupStartParams {
    /// How.
    pub mode: WindowsSandboxSetupMode,
    /// The workspace.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
}

/// Result of `windowsSandbox/setupStart`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowsSandboxSetupStartResponse {
    /// The set-up started; its outcome follows as `windowsSandbox/setupCompleted`.
    pub started: bool,
}

/// `windowsSandbox/setupCompleted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowsSandboxSetupCompletedNotification {
    /// How it was set up.
    pub mode: WindowsSandboxSetupMode,
    /// Whether it worked.
    pub success: bool,
    /// Why not.
    pub error: Option<String>,
}

/// Params of `thread/approveGuardianDeniedAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadApproveGuardianDeniedActionParams {
    /// The thread (loaded).
    pub thread_id: String,
    /// The reviewer's denial the person overrides.
    pub event: serde_json::Value,
}
