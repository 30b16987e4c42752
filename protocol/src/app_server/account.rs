//! `account/read` and `account/bedrock/checkGovCloudRequirements`: who the server runs as,
//! and what comes with an account or a platform Keel does not have (`app/list`,
//! `windowsSandbox/readiness`). Keel has no ChatGPT login: it reports API-key authentication
//! (the provider's key comes from the environment).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `account/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountParams {
    /// Refresh credentials first (nothing to refresh in Keel).
    #[serde(default)]
    pub refresh_token: Option<bool>,
}

/// The account the server uses with the model provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Account {
    /// An API key from the environment.
    ApiKey,
}

/// Result of `account/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetAccountResponse {
    /// The account; `null` when no key is needed (a local provider).
    pub account: Option<Account>,
    /// Whether the client must sign in to OpenAI first (never, with Keel).
    pub requires_openai_auth: bool,
    /// The signed-in user (none).
    #[serde(default)]
    pub user_id: Option<String>,
}

/// Params of requests that take none; `null`, `{}` or no params at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoParams {}

/// Result of `account/bedrock/checkGovCloudRequirements`: Keel never runs on Bedrock GovCloud.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckGovCloudRequirementsResponse {
    /// Whether the account is a GovCloud one.
    pub is_gov_cloud: bool,
    /// Whether the client should warn about it.
    pub should_warn: bool,
}

/// Result of `configRequirements/read`: constraints an administrator placed on the
/// configuration (Keel has none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigRequirementsReadResponse {
    /// The requirements; always `null`.
    pub requirements: Option<serde_json::Value>,
    /// Whether speed modes can be chosen independently of the model (no).
    #[serde(default)]
    pub supports_independent_speed_modes: Option<bool>,
}

/// Params of `externalAgentConfig/detect` (Codex 0.169): where to look for other agents'
/// configuration to import.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigDetectParams {
    /// Working directories to look in.
    #[serde(default)]
    pub cwds: Option<Vec<String>>,
    /// Whether to look in the home directory too.
    #[serde(default)]
    pub include_home: bool,
    /// Sessions older than this many days are not offered.
    #[serde(default)]
    pub max_session_age_days: Option<u32>,
    /// At most this many sessions are offered.
    #[serde(default)]
    pub max_sessions: Option<u32>,
    /// Which other agent to import from.
    #[serde(default)]
    pub migration_source: Option<String>,
    /// Ignored (Codex keeps it for compatibility).
    #[serde(default)]
    pub source: Option<String>,
}

/// Result of `externalAgentConfig/detect`: what Keel can import (projects' `CLAUDE.md`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExternalAgentConfigDetectResponse {
    /// What could be imported (`ExternalAgentConfigMigrationItem`s).
    pub items: Vec<serde_json::Value>,
    /// Connectors found in other agents' setup (always empty).
    #[serde(default)]
    pub connectors: Vec<serde_json::Value>,
}

/// Params of `app/list` (Codex 0.171): ChatGPT apps (connectors).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsListParams {
    /// Where the page starts.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Fetch again instead of using a cached copy.
    #[serde(default)]
    pub force_refetch: Option<bool>,
    /// Most apps in the page.
    #[serde(default)]
    pub limit: Option<u32>,
    /// The thread asking.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// Result of `app/list`: apps come with a ChatGPT account, so under API-key
/// authentication there are none (as Codex answers).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsListResponse {
    /// The apps.
    pub data: Vec<serde_json::Value>,
    /// Where the next page starts, if any.
    pub next_cursor: Option<String>,
}

/// Result of `windowsSandbox/readiness` (Codex 0.171).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowsSandboxReadinessResponse {
    /// `ready`, `notConfigured` or `updateRequired`; Keel has no Windows sandbox:
    /// `notConfigured`, as Codex answers off Windows.
    pub status: String,
}

/// Params of `app/read` (Codex 0.171).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsReadParams {
    /// The apps to read.
    pub app_ids: Vec<String>,
    /// Add each app's tools.
    #[serde(default)]
    pub include_tools: bool,
    /// The thread asking (must be loaded).
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// Result of `app/read`: no app exists without a ChatGPT account, so every id is missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsReadResponse {
    /// The apps found (none).
    pub apps: Vec<serde_json::Value>,
    /// The ids not found.
    pub missing_app_ids: Vec<String>,
}

/// Params of `app/installed` (Codex 0.171).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsInstalledParams {
    /// Fetch again.
    #[serde(default)]
    pub force_refresh: bool,
    /// The thread asking (must be loaded).
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// Result of `app/installed`: none without a ChatGPT account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppsInstalledResponse {
    /// Installed apps (none).
    pub apps: Vec<serde_json::Value>,
}
