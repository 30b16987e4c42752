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
    /// List the models of this provider (Codex 0.171); the configured one when absent.
    #[serde(default)]
    pub model_provider: Option<String>,
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
    /// The model a picker suggests instead (Codex 0.171).
    #[serde(default)]
    pub upgrade: Option<String>,
    /// More about that suggestion (Codex 0.171).
    #[serde(default)]
    pub upgrade_info: Option<ModelUpgradeInfo>,
    /// A notice shown when the model becomes available (Codex 0.171; Keel has none).
    #[serde(default)]
    pub availability_nux: Option<serde_json::Value>,
    /// What the model is best at, when it is a specialist (Codex 0.171).
    #[serde(default)]
    pub model_specialty: Option<String>,
    /// What the model accepts as input (`text`, `image`, `audio`; Codex 0.171).
    #[serde(default = "text_and_image")]
    pub input_modalities: Vec<String>,
    /// Whether the model takes a personality (Codex 0.171).
    #[serde(default)]
    pub supports_personality: bool,
    /// Which multi-agent tool set the model knows (`v1`, `v2`; Codex 0.171).
    #[serde(default)]
    pub multi_agent_version: Option<String>,
    /// Processing tiers beyond the default, by short name (Codex 0.171).
    #[serde(default)]
    pub additional_speed_tiers: Vec<String>,
    /// Processing tiers, as pickers show them (Codex 0.171).
    #[serde(default)]
    pub service_tiers: Vec<ModelServiceTier>,
    /// The tier used when the user picks none (Codex 0.171).
    #[serde(default)]
    pub default_service_tier: Option<String>,
    /// Access programs the account is enrolled in for this model (Codex 0.171; none in Keel).
    #[serde(default)]
    pub available_access_programs: Option<serde_json::Value>,
}

fn text_and_image() -> Vec<String> {
    vec!["text".to_string(), "image".to_string()]
}

/// The model a picker suggests in place of an older one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelUpgradeInfo {
    /// The suggested model.
    pub model: String,
    /// Short text for the suggestion.
    #[serde(default)]
    pub upgrade_copy: Option<String>,
    /// Where to read more.
    #[serde(default)]
    pub model_link: Option<String>,
    /// Longer text about the move, as Markdown.
    #[serde(default)]
    pub migration_markdown: Option<String>,
    /// When the older model retires (Unix seconds).
    #[serde(default)]
    pub retirement_at: Option<i64>,
}

/// A processing tier a picker offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelServiceTier {
    /// The tier's id (`priority`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it costs and gives.
    pub description: String,
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
