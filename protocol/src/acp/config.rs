//! Session configuration an editor shows as pickers: the mode (what the agent may do without
//! asking), the model and its reasoning effort (`session/set_config_option`, and the older
//! `session/set_mode`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A picker: its current value and the values it offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigOption {
    /// Its id, for `session/set_config_option`.
    pub id: String,
    /// What people see.
    pub name: String,
    /// What it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `mode`, `model` or `thought_level`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Always `select` (Keel offers no boolean options).
    #[serde(rename = "type")]
    pub kind: String,
    /// The value now.
    pub current_value: String,
    /// The values offered.
    pub options: Vec<SessionConfigSelectOption>,
}

/// A value a picker offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigSelectOption {
    /// The value.
    pub value: String,
    /// What people see.
    pub name: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Params of `session/set_config_option`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionRequest {
    /// The session.
    pub session_id: String,
    /// The picker.
    pub config_id: String,
    /// The value chosen (a string for a select).
    pub value: serde_json::Value,
}

/// Result of `session/set_config_option`: every picker as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionResponse {
    /// The pickers.
    pub config_options: Vec<SessionConfigOption>,
}
