//! The `initialize` / `initialized` handshake.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `initialize`: who the client is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ExecServerInitializeParams")]
pub struct InitializeParams {
    /// A name for the client, for logs.
    pub client_name: String,
}

/// Result of `initialize`: the protocol the server speaks and what it offers beyond it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ExecServerInitializeResponse")]
pub struct InitializeResponse {
    /// Always [`super::EXEC_SERVER_PROTOCOL_VERSION`] for this protocol.
    pub protocol_version: String,
    /// The extensions this server supports ([`super::EXEC_SERVER_EXTENSIONS`] for Keel's), so a
    /// client need not probe for them; absent from servers that predate the list.
    #[serde(default)]
    pub extensions: Vec<String>,
}

/// Params of the `initialized` notification; the server ignores any content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ExecServerInitializedParams")]
pub struct InitializedParams {}
