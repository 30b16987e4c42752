//! `model/list` and `config/read`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{AskForApproval, ReasoningEffort, SandboxMode};

/// Params of `model/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListParams {
    /// From the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<u32>,
    /// Include hidden models.
    #[serde(default)]
    pub include_hidden: Option<bool>,
}

/// A reasoning effort a model supports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEffortOption {
    /// The effort.
    pub reasoning_effort: ReasoningEffort,
    /// What it means.
    pub description: String,
}

/// One model a client can pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// Stable id.
    pub id: String,
    /// The model name sent to the provider.
    pub model: String,
    /// Name to show.
    pub display_name: String,
    /// What it is.
    pub description: String,
    /// Hidden from pickers.
    pub hidden: bool,
    /// The configured default.
    pub is_default: bool,
    /// Default reasoning effort.
    pub default_reasoning_effort: ReasoningEffort,
    /// Efforts it accepts.
    pub supported_reasoning_efforts: Vec<ReasoningEffortOption>,
}

/// Result of `model/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListResponse {
    /// Models.
    pub data: Vec<Model>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// Params of `config/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigReadParams {
    /// Resolve as if running in this directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Accepted for compatibility; Keel has one layer (the user's file).
    #[serde(default)]
    pub include_layers: bool,
}

/// The effective configuration, in `config.toml` key names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigSnapshot {
    /// Model.
    pub model: Option<String>,
    /// Provider id.
    pub model_provider: Option<String>,
    /// Approval policy.
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox mode.
    pub sandbox_mode: Option<SandboxMode>,
    /// Reasoning effort.
    pub model_reasoning_effort: Option<ReasoningEffort>,
    /// Context window.
    pub model_context_window: Option<u64>,
    /// Selected profile.
    pub profile: Option<String>,
    /// Developer instructions.
    pub developer_instructions: Option<String>,
    /// Base instructions override.
    pub instructions: Option<String>,
}

/// Result of `config/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigReadResponse {
    /// The effective configuration.
    pub config: ConfigSnapshot,
    /// Where each key came from, by dotted key (Keel reports the file for file keys).
    pub origins: serde_json::Map<String, serde_json::Value>,
}
