//! `session/load`, `session/resume`, `session/list`, `session/close` and `session/delete`:
//! the editor's way back to sessions recorded earlier (Keel's recorded threads).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::SessionModeState;

/// Params of `session/load` (the conversation is replayed as `session/update`s before the
/// answer) and of `session/resume` (it is not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    /// The session.
    pub session_id: String,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// MCP servers the editor wants the session to use.
    #[serde(default)]
    pub mcp_servers: Vec<serde_json::Value>,
    /// More directories the session may work in.
    #[serde(default)]
    pub additional_directories: Vec<PathBuf>,
}

/// Result of `session/load` and `session/resume`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionResponse {
    /// The modes the session offers and the current one.
    pub modes: Option<SessionModeState>,
    /// The session's pickers.
    pub config_options: Option<Vec<super::SessionConfigOption>>,
}

/// Params of `session/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsRequest {
    /// Only sessions of this working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Result of `session/list`: newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsResponse {
    /// This page's sessions.
    pub sessions: Vec<SessionInfo>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// A recorded session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Its id (the id `keel sessions` shows).
    pub session_id: String,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Its name, or its first message.
    pub title: Option<String>,
    /// When it last changed (RFC 3339).
    pub updated_at: Option<String>,
}

/// Params of `session/close` and `session/delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionIdRequest {
    /// The session.
    pub session_id: String,
}

/// Which of the session methods beyond `session/new` the agent offers (each `{}` when
/// offered).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCapabilities {
    /// `session/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<super::EmptyObject>,
    /// `session/resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<super::EmptyObject>,
    /// `session/close`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<super::EmptyObject>,
    /// `session/delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<super::EmptyObject>,
    /// `additionalDirectories` on `session/new`, `load`, `resume` and `fork`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_directories: Option<super::EmptyObject>,
    /// `session/fork` (from ACP's unstable set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<super::EmptyObject>,
}
