//! `experimentalFeature/list` (Codex 0.169): the feature switches a client may show and
//! toggle, with their stage and state.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `experimentalFeature/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentalFeatureListParams {
    /// From the previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<u32>,
    /// The thread whose configuration decides the state, if any.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// Result of `experimentalFeature/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentalFeatureListResponse {
    /// The features.
    pub data: Vec<ExperimentalFeature>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// One feature switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentalFeature {
    /// Its key under `[features]`.
    pub name: String,
    /// Where it stands.
    pub stage: ExperimentalFeatureStage,
    /// A name to show, for features in beta.
    pub display_name: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// What to tell users when it is introduced.
    pub announcement: Option<String>,
    /// Whether it is on by default.
    pub default_enabled: bool,
    /// Whether it is on in the loaded configuration.
    pub enabled: bool,
}

/// A feature's lifecycle stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ExperimentalFeatureStage {
    /// Open for testing and feedback.
    Beta,
    /// Not ready for broad use.
    UnderDevelopment,
    /// Ready.
    Stable,
    /// To be avoided.
    Deprecated,
    /// Kept only so old configurations load.
    Removed,
}
