//! `initialize` and `authenticate`: what the editor and the agent can do, and how the agent
//! signs in to its model provider.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A program's name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Params of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// The newest protocol version the editor speaks.
    pub protocol_version: u16,
    /// What the editor offers the agent.
    #[serde(default)]
    pub client_capabilities: ClientCapabilities,
    /// The editor.
    #[serde(default)]
    pub client_info: Option<Implementation>,
}

/// What the editor offers the agent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// File reads and writes through the editor (its buffers).
    #[serde(default)]
    pub fs: FileSystemCapabilities,
    /// Commands run in the editor's terminals.
    #[serde(default)]
    pub terminal: bool,
    /// Session extensions the editor shows.
    #[serde(default)]
    pub session: Option<ClientSessionCapabilities>,
    /// Sub-agents shown as sessions of their own (unstable ACP; present, even as `{}`: yes).
    #[serde(default)]
    pub subagents: Option<serde_json::Value>,
}

/// Session extensions the editor shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSessionCapabilities {
    /// `notice` updates (present, even as `{}`: shown).
    #[serde(default)]
    pub notices: Option<serde_json::Value>,
}

/// The editor's file methods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapabilities {
    /// `fs/read_text_file`.
    #[serde(default)]
    pub read_text_file: bool,
    /// `fs/write_text_file`.
    #[serde(default)]
    pub write_text_file: bool,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version both speak (Keel: 1).
    pub protocol_version: u16,
    /// What the agent can do.
    pub agent_capabilities: AgentCapabilities,
    /// How the agent may be signed in.
    pub auth_methods: Vec<AuthMethod>,
    /// The agent.
    pub agent_info: Implementation,
    /// Extensions beyond the protocol (`steering`: `_session/steering` is offered).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

/// What the agent can do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `session/load`.
    pub load_session: bool,
    /// What a prompt may hold besides text.
    pub prompt_capabilities: PromptCapabilities,
    /// Which MCP transports the editor's servers may use.
    pub mcp_capabilities: McpCapabilities,
    /// The session methods offered beyond `session/new`.
    pub session_capabilities: super::SessionCapabilities,
    /// Sign-in methods beyond `authenticate` (`logout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AgentAuthCapabilities>,
}

/// Sign-in methods beyond `authenticate`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentAuthCapabilities {
    /// `logout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logout: Option<super::EmptyObject>,
}

/// What a prompt may hold besides text and resource links.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Images.
    pub image: bool,
    /// Audio.
    pub audio: bool,
    /// Embedded resources (file contents the editor sends).
    pub embedded_context: bool,
}

/// Which MCP transports the editor's servers may use (stdio always).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpCapabilities {
    /// Streamable HTTP.
    pub http: bool,
    /// The legacy SSE transport.
    pub sse: bool,
}

/// A way the agent can be signed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    /// Its id, for `authenticate`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
}

/// Params of `authenticate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateRequest {
    /// One of the offered methods.
    pub method_id: String,
}
