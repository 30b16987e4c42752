//! The `initialize` handshake of the app-server.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Identifies the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientInfo {
    /// Client name.
    pub name: String,
    /// Human-readable title.
    #[serde(default)]
    pub title: Option<String>,
    /// Client version.
    pub version: String,
}

/// What the client supports or opts out of.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Accepted for compatibility; Keel has no experimental API.
    #[serde(default)]
    pub experimental_api: bool,
    /// Notification methods this connection must not receive.
    #[serde(default)]
    pub opt_out_notification_methods: Option<Vec<String>>,
}

/// Params of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Who the client is.
    pub client_info: ClientInfo,
    /// What it supports.
    #[serde(default)]
    pub capabilities: Option<InitializeCapabilities>,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// `keel/<version> (<os>; <arch>) <client>/<version>`.
    pub user_agent: String,
    /// `unix` or `windows`.
    pub platform_family: String,
    /// `linux`, `macos` or `windows`.
    pub platform_os: String,
    /// The server's home directory (Keel's `KEEL_HOME`; Codex 0.169 clients read it).
    #[serde(default)]
    pub codex_home: Option<std::path::PathBuf>,
}

/// Params of the `initialized` notification (ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializedNotification {}

/// The Codex release whose app-server protocol Keel speaks. It leads `userAgent`'s version,
/// where Codex clients compare it with their own (an older one makes the TUI warn that the
/// server is out of date); Keel's own version follows in the parentheses.
pub const CODEX_PROTOCOL_VERSION: &str = "0.171.0";

/// The `userAgent` Keel answers `initialize` with:
/// `keel/<Codex protocol version> (<os>; <arch>; keel <Keel version>) <client>/<client version>`.
pub fn keel_user_agent(keel_version: &str, client_name: &str, client_version: &str) -> String {
    format!(
        "keel/{CODEX_PROTOCOL_VERSION} ({}; {}; keel {keel_version}) {client_name}/{client_version}",
        std::env::consts::OS,
        std::env::consts::ARCH,
    )
}
