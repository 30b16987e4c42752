//! Sessions in v2: opened with their pickers and commands in the answer, resumed with an
//! optional replay, prompted (the answer is the prompt's message id; the turn's end is a
//! `state_update`), and configured with typed values.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::update::{AvailableCommand, SessionConfigOption};

/// Params of `session/new` (v2: the MCP servers may be left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// More directories the session may work in.
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
    /// MCP servers the editor wants the session to use.
    #[serde(default)]
    pub mcp_servers: Vec<serde_json::Value>,
}

/// Result of `session/new` (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The session (a Keel thread id).
    pub session_id: String,
    /// The session's pickers.
    pub config_options: Vec<SessionConfigOption>,
    /// The slash commands the session takes.
    pub available_commands: Vec<AvailableCommand>,
}

/// Params of `session/resume` (v2; `replayFrom` asks for the conversation again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeSessionRequest {
    /// The recorded session.
    pub session_id: String,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// More directories the session may work in.
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
    /// MCP servers the editor wants the session to use.
    #[serde(default)]
    pub mcp_servers: Vec<serde_json::Value>,
    /// Where the replay starts; none: no replay.
    #[serde(default)]
    pub replay_from: Option<ReplayFrom>,
}

/// Where a replay starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReplayFrom {
    /// From the conversation's first message.
    Start,
}

/// Result of `session/resume` (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeSessionResponse {
    /// The session's pickers.
    pub config_options: Vec<SessionConfigOption>,
    /// The slash commands the session takes.
    pub available_commands: Vec<AvailableCommand>,
}

/// Result of `session/prompt` (v2): the prompt is part of the conversation; how its turn
/// goes is told by `session/update`s, its end by an idle `state_update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// The user message the prompt became.
    pub message_id: String,
}

/// Params of `session/set_config_option` (v2: the value is typed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionRequest {
    /// The session.
    pub session_id: String,
    /// The picker.
    pub config_id: String,
    /// The value chosen.
    #[serde(flatten)]
    pub value: ConfigValue,
}

/// A picker's chosen value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ConfigValue {
    /// One of a select's values.
    Id(String),
    /// An on/off option's state.
    Boolean(bool),
}

/// Result of `session/set_config_option` (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionConfigOptionResponse {
    /// Every picker as it is now.
    pub config_options: Vec<SessionConfigOption>,
}
