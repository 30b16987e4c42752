//! `plugin/share/*`: sharing plugins through OpenAI's remote catalogue, which needs a ChatGPT
//! account; Keel accepts the shapes and refuses each request with the reason.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `plugin/share/save`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginShareSaveParams {
    /// The plugin's directory.
    pub plugin_path: PathBuf,
    /// The share to update, if it exists.
    #[serde(default)]
    pub remote_plugin_id: Option<String>,
    /// Who may find it.
    #[serde(default)]
    pub discoverability: Option<serde_json::Value>,
    /// Who it is shared with.
    #[serde(default)]
    pub share_targets: Option<Vec<serde_json::Value>>,
}

/// Params of `plugin/share/updateTargets`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginShareUpdateTargetsParams {
    /// The share.
    pub remote_plugin_id: String,
    /// Who may find it.
    pub discoverability: serde_json::Value,
    /// Who it is shared with.
    pub share_targets: Vec<serde_json::Value>,
}

/// Params of `plugin/share/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PluginShareListParams {}

/// Params of `plugin/share/checkout` and `plugin/share/delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginShareIdParams {
    /// The share.
    pub remote_plugin_id: String,
}
