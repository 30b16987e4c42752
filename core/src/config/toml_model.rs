//! The raw shape of `config.toml`, as deserialised before any defaults or overrides are
//! resolved. Every field is optional and unknown keys do not fail the load, so files written for
//! Codex (which carry many keys Keel has no use for) load unchanged; `unknown_keys` decides
//! which of them deserve a warning.

use std::collections::BTreeMap;
use std::path::PathBuf;

use keel_protocol::{AskForApproval, ReasoningEffort, SandboxMode};
use serde::Deserialize;

use super::mcp_servers::McpServerToml;
use super::provider::ModelProviderInfo;
use super::shell_env::{ShellEnvironmentPolicy, ShellEnvironmentPolicyInherit};
use super::{ReasoningSummaryMode, Verbosity};

/// The whole file.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ConfigToml {
    pub model: Option<String>,
    pub model_provider: Option<String>,
    pub model_providers: BTreeMap<String, ModelProviderInfo>,
    pub approval_policy: Option<AskForApproval>,
    pub sandbox_mode: Option<SandboxMode>,
    pub sandbox_workspace_write: Option<SandboxWorkspaceWriteToml>,
    pub shell_environment_policy: ShellEnvironmentPolicyToml,
    pub profile: Option<String>,
    pub profiles: BTreeMap<String, ConfigProfileToml>,
    pub model_reasoning_effort: Option<ReasoningEffort>,
    pub base_instructions: Option<String>,
    pub developer_instructions: Option<String>,
    pub project_doc_max_bytes: Option<usize>,
    pub model_context_window: Option<u64>,
    pub features: FeaturesToml,
    pub exec_server_url: Option<String>,
    pub exec_server_auth_token_env: Option<String>,
    /// `environment`: the named environment threads run in (`local`: this machine).
    pub environment: Option<String>,
    /// `[environments.<id>]`: exec-servers by name.
    pub environments: BTreeMap<String, super::EnvironmentToml>,
    pub model_auto_compact_token_limit: Option<u64>,
    pub compact_prompt: Option<String>,
    pub tool_output_token_limit: Option<usize>,
    pub agents: AgentsToml,
    pub tools: ToolsToml,
    /// `[app_server]`: what the app-server lets its clients do.
    pub app_server: AppServerToml,
    pub model_reasoning_summary: Option<ReasoningSummaryMode>,
    pub model_verbosity: Option<Verbosity>,
    pub model_supports_reasoning_summaries: Option<bool>,
    pub mcp_servers: BTreeMap<String, McpServerToml>,
    /// Where MCP servers' OAuth logins are kept: `file`, `keyring` or `auto`.
    pub mcp_oauth_credentials_store: Option<String>,
    /// The login callback port of every server without its own `oauth.callback_port`.
    pub mcp_oauth_callback_port: Option<u16>,
    /// The login redirect URL of every server without its own `oauth.callback_url`.
    pub mcp_oauth_callback_url: Option<String>,
    /// `[marketplaces.NAME]`: added plugin marketplaces; read by the plugins module.
    pub marketplaces: Option<toml::Value>,
    /// `[plugins."PLUGIN@MARKETPLACE"]`: installed plugins; read by the plugins module.
    pub plugins: Option<toml::Value>,
    pub sqlite_home: Option<PathBuf>,
    pub projects: BTreeMap<String, ProjectToml>,
    /// Hook definitions and trust records; read by the hooks module from the file itself.
    pub hooks: Option<toml::Value>,
    pub bypass_hook_trust: Option<bool>,
    /// `[[skills.config]]`: skills turned off or on.
    pub skills: crate::skills::SkillsToml,
    pub service_tier: Option<super::ServiceTier>,
    /// Replaces the built-in `openai` provider's base URL (before `OPENAI_BASE_URL`).
    pub openai_base_url: Option<String>,
    /// A catalogue file correcting or extending the built-in model catalogue.
    pub model_catalog_json: Option<PathBuf>,
    /// `[otel]`: telemetry exporters, resolved by the otel module.
    pub otel: super::otel::OtelToml,
}

/// `[projects."/abs/path"]`: what the user decided about a project, as Codex records it.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct ProjectToml {
    /// `"trusted"` lets the project's own skills (and hooks) load.
    pub trust_level: Option<String>,
}

/// `[tools]`: optional tools. Other keys load silently.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct ToolsToml {
    /// Offer the provider's built-in `web_search` (Responses API; default off).
    pub web_search: Option<bool>,
    /// `[tools.update_plan]`: offer `update_plan` (default on).
    pub update_plan: Option<ToolSwitchToml>,
    /// `[tools.experimental_request_user_input]`: offer `request_user_input` (default on).
    pub experimental_request_user_input: Option<ToolSwitchToml>,
    /// Every other key: the switches of built-ins that declare one (`view_image = false`).
    #[serde(flatten)]
    pub switches: BTreeMap<String, super::switch_value::SwitchValue>,
}

/// A tool's own table, as Codex writes it (`[tools.update_plan] enabled = false`).
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct ToolSwitchToml {
    /// Whether the tool is offered.
    pub enabled: Option<bool>,
}

/// `[app_server]`: what `keel app-server` lets its clients do (a Keel key; Codex has none).
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct AppServerToml {
    /// Hold every client request within the server's own sandbox (default off).
    pub clients_within_sandbox: Option<bool>,
}

/// `[agents]`: limits on sub-agents. Other keys (Codex's agent roles) load silently.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct AgentsToml {
    /// Sub-agents (job workers included) alive at once in one conversation tree.
    pub max_threads: Option<usize>,
    /// How deep sub-agents may nest (1: only the top conversation spawns).
    pub max_depth: Option<u32>,
}

/// `[features]`: Codex's feature switches. Keel reads the ones it implements; the others
/// (Codex has many) load silently.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct FeaturesToml {
    /// Offer `exec_command`/`write_stdin` instead of `shell` (default on).
    pub unified_exec: Option<bool>,
    /// Capture the login shell's environment once and replay it (default on).
    pub shell_snapshot: Option<bool>,
    /// Offer the sub-agent tools (`spawn_agent`, `wait_agent`, ...; default on).
    pub multi_agent: Option<bool>,
    /// Offer `spawn_agents_on_csv` (default on).
    pub enable_fanout: Option<bool>,
    /// Offer the command tools (`shell`, or `exec_command`/`write_stdin`; default on).
    pub shell_tool: Option<bool>,
    /// Offer the goal tools (default on).
    pub goals: Option<bool>,
    /// Keep workspace checkpoints around turns (default on).
    pub checkpoints: Option<bool>,
    /// Drive the models whose catalogue entry says so in code mode (default on; off sends
    /// every model its tools one by one).
    pub code_mode: Option<bool>,
    /// Every other key: the switches of built-ins that declare one, and Codex's others.
    #[serde(flatten)]
    pub switches: BTreeMap<String, super::switch_value::SwitchValue>,
}

/// A `[profiles.<name>]` table: a named set of values that win over the top-level ones.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ConfigProfileToml {
    pub model: Option<String>,
    pub model_provider: Option<String>,
    pub approval_policy: Option<AskForApproval>,
    pub sandbox_mode: Option<SandboxMode>,
    pub model_reasoning_effort: Option<ReasoningEffort>,
    pub base_instructions: Option<String>,
    pub developer_instructions: Option<String>,
    pub model_context_window: Option<u64>,
    pub model_reasoning_summary: Option<ReasoningSummaryMode>,
    pub model_verbosity: Option<Verbosity>,
}

/// `[sandbox_workspace_write]`: parameters of the `workspace-write` sandbox mode.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct SandboxWorkspaceWriteToml {
    pub writable_roots: Vec<PathBuf>,
    pub network_access: bool,
    pub exclude_tmpdir_env_var: bool,
    pub exclude_slash_tmp: bool,
    /// Let commands write the `.git` of writable roots (read-only by default).
    pub allow_git_writes: bool,
}

/// `[shell_environment_policy]` as written.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct ShellEnvironmentPolicyToml {
    pub inherit: Option<ShellEnvironmentPolicyInherit>,
    pub ignore_default_excludes: Option<bool>,
    pub exclude: Vec<String>,
    pub set: BTreeMap<String, String>,
    pub include_only: Vec<String>,
}

impl From<ShellEnvironmentPolicyToml> for ShellEnvironmentPolicy {
    fn from(toml: ShellEnvironmentPolicyToml) -> Self {
        Self {
            inherit: toml.inherit.unwrap_or_default(),
            ignore_default_excludes: toml.ignore_default_excludes.unwrap_or(false),
            exclude: toml.exclude,
            set: toml.set,
            include_only: toml.include_only,
        }
    }
}
