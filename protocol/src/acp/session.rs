//! `session/new`, `session/prompt`, `session/cancel` and `session/set_mode`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ContentBlock;

/// Params of `session/new`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// MCP servers the editor wants the session to use.
    pub mcp_servers: Vec<serde_json::Value>,
    /// More directories the session may work in.
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
}

/// Result of `session/new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The session (a Keel thread id).
    pub session_id: String,
    /// The modes the session offers and the current one.
    pub modes: Option<SessionModeState>,
    /// The session's pickers.
    pub config_options: Option<Vec<super::SessionConfigOption>>,
}

/// The modes a session offers and the current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionModeState {
    /// The current mode.
    pub current_mode_id: String,
    /// Every mode.
    pub available_modes: Vec<SessionMode>,
}

/// A mode of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionMode {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it means.
    #[serde(default)]
    pub description: Option<String>,
}

/// Params of `session/set_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionModeRequest {
    /// The session.
    pub session_id: String,
    /// The mode.
    pub mode_id: String,
}

/// Params of `session/prompt`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    /// The session.
    pub session_id: String,
    /// What the person sent.
    pub prompt: Vec<ContentBlock>,
}

/// Why a prompt turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished.
    EndTurn,
    /// The model hit its output limit.
    MaxTokens,
    /// Too many model requests in one turn.
    MaxTurnRequests,
    /// The model refused.
    Refusal,
    /// The editor cancelled the turn.
    Cancelled,
}

/// Result of `session/prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// Why the turn ended.
    pub stop_reason: StopReason,
}

/// `session/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    /// The session.
    pub session_id: String,
}

/// `$/cancel_request`: the editor no longer wants the answer to a request (for a prompt: the
/// turn is cancelled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequestNotification {
    /// The request.
    pub request_id: crate::RequestId,
}

/// Params of `_session/steering` (the extension Claude's and Codex's ACP agents offer):
/// input for the running turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRequest {
    /// The session.
    pub session_id: String,
    /// What to add to the turn.
    pub prompt: Vec<super::ContentBlock>,
    /// `steering.idleBehavior: "promptRequired"`: with no turn running, answer so instead of
    /// starting one.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

/// Result of `_session/steering`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SteeringResponse {
    /// `injected` (the running turn took it), `startedNewTurn` or `promptRequired`.
    pub outcome: String,
    /// Why, for `promptRequired` (`noRunningTurn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Params of `session/fork` (ACP's unstable set): a new session with a copy of another's
/// conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionRequest {
    /// The session to copy.
    pub session_id: String,
    /// The copy's working directory (absolute).
    pub cwd: PathBuf,
    /// MCP servers the editor wants the copy to use.
    #[serde(default)]
    pub mcp_servers: Vec<serde_json::Value>,
    /// More directories the copy may work in.
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
}
