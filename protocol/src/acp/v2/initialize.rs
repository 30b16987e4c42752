//! `initialize` and `auth/login` in v2: the client's and agent's `info` and `capabilities`,
//! each capability an object whose presence means "supported".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::acp::{EmptyObject, Implementation};

/// Params of `initialize` (v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// The newest version the editor speaks.
    pub protocol_version: u16,
    /// The editor.
    pub info: Implementation,
    /// What the editor offers (Keel uses none of the draft's client capabilities).
    #[serde(default)]
    pub capabilities: serde_json::Value,
}

/// Result of `initialize` (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version this connection speaks.
    pub protocol_version: u16,
    /// The agent.
    pub info: Implementation,
    /// What the agent does.
    pub capabilities: AgentCapabilities,
    /// How the editor may log in (none for a provider without a key).
    pub auth_methods: Vec<AuthMethod>,
}

/// What the agent does (v2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// What sessions do.
    pub session: SessionCapabilities,
}

/// What sessions do (v2); list, resume and close are always there in v2.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCapabilities {
    /// What a prompt may hold besides text.
    pub prompt: PromptCapabilities,
    /// The MCP transports of the editor's servers Keel connects to.
    pub mcp: McpCapabilities,
    /// `session/delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<EmptyObject>,
    /// `additionalDirectories` on new and resumed sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_directories: Option<EmptyObject>,
}

/// What a prompt may hold besides text (v2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<EmptyObject>,
    /// Embedded resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedded_context: Option<EmptyObject>,
}

/// The MCP transports Keel connects to (v2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpCapabilities {
    /// Servers Keel starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio: Option<EmptyObject>,
    /// Streamable HTTP servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<EmptyObject>,
}

/// A way to log in (v2): the agent handles it through `auth/login`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuthMethod {
    /// Keel checks the key itself.
    #[serde(rename_all = "camelCase")]
    Agent {
        /// The method's id.
        method_id: String,
        /// Its name.
        name: String,
    },
}

/// Params of `auth/login`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginAuthRequest {
    /// One of the advertised methods.
    pub method_id: String,
}
