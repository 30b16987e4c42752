//! `config/value/write` and `config/batchWrite`: a client changes the user's `config.toml`
//! (the Codex TUI saves the model it picked this way).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How an edit combines with the value already at its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum MergeStrategy {
    /// The value takes the key's place.
    Replace,
    /// A table is merged into the table already there; anything else replaces.
    Upsert,
}

/// One change: a dotted key path and its value (`null` removes the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigEdit {
    /// The dotted key path, e.g. `model` or `model_providers.mock.base_url`.
    pub key_path: String,
    /// The new value.
    pub value: Value,
    /// How it combines with what is there.
    pub merge_strategy: MergeStrategy,
}

/// Params of `config/value/write`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValueWriteParams {
    /// The change.
    #[serde(flatten)]
    pub edit: ConfigEdit,
    /// The file to write (only the user's `config.toml`; the default).
    #[serde(default)]
    pub file_path: Option<PathBuf>,
    /// Refuse the write unless the file is still at this version.
    #[serde(default)]
    pub expected_version: Option<String>,
}

/// Params of `config/batchWrite`: the edits apply in order, all or none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigBatchWriteParams {
    /// The changes.
    pub edits: Vec<ConfigEdit>,
    /// The file to write (only the user's `config.toml`; the default).
    #[serde(default)]
    pub file_path: Option<PathBuf>,
    /// Refuse the write unless the file is still at this version.
    #[serde(default)]
    pub expected_version: Option<String>,
    /// Apply the new settings to loaded threads (Keel: new threads read the file; loaded
    /// threads keep theirs, as Codex keeps model and effort).
    #[serde(default)]
    pub reload_user_config: bool,
}

/// Whether the written value is the one in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WriteStatus {
    /// It is.
    Ok,
    /// A layer above the file overrides it.
    OkOverridden,
}

/// Result of `config/value/write` and `config/batchWrite`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigWriteResponse {
    /// Whether the value is in effect.
    pub status: WriteStatus,
    /// The file's new version, for the next `expectedVersion`.
    pub version: String,
    /// The file written.
    pub file_path: PathBuf,
    /// What overrides the value, when something does.
    pub overridden_metadata: Option<Value>,
}
