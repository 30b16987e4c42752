//! `mcpServer/oauth/login` and its completion notification (Codex 0.171): a client starts an
//! MCP server's OAuth login, shows the user the page, and hears when it ended.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the login registers its client (Codex 0.171's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpServerOauthClientRegistration {
    /// Whatever the authorization server accepts.
    Auto,
    /// A client ID metadata document.
    Cimd,
    /// Dynamic client registration.
    Dcr,
}

/// Params of `mcpServer/oauth/login`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerOauthLoginParams {
    /// The configured server.
    pub name: String,
    /// Scopes to ask for; the server's when omitted.
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    /// How long the login waits for the browser (seconds; 300 when omitted).
    #[serde(default)]
    pub timeout_secs: Option<i64>,
    /// The thread the login is for, echoed in the completion.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The environment of the server (only the local one is known to Keel).
    #[serde(default)]
    pub environment_id: Option<String>,
    /// How to register the client; automatic when omitted.
    #[serde(default)]
    pub client_registration: Option<McpServerOauthClientRegistration>,
}

/// Result of `mcpServer/oauth/login`: the page to send the user to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerOauthLoginResponse {
    /// The authorization page.
    pub authorization_url: String,
    /// This attempt, as named again in the completion.
    #[serde(default)]
    pub login_id: Option<String>,
}

/// `mcpServer/oauthLogin/completed`: a login ended, signed in or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerOauthLoginCompletedNotification {
    /// The server.
    pub name: String,
    /// Whether the tokens were obtained and kept.
    pub success: bool,
    /// Why not, when it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The attempt, as the response named it.
    #[serde(default)]
    pub login_id: Option<String>,
    /// The thread the login was started for.
    #[serde(default)]
    pub thread_id: Option<String>,
}
