//! Plugins and marketplaces on the app-server (Codex 0.171's shapes): listing marketplaces
//! and their plugins, reading one plugin, installing and uninstalling, adding, upgrading and
//! removing marketplaces. Fields Codex fills from a ChatGPT account's remote catalogue
//! (sharing, remote ids, plan eligibility) are always `null` here.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `plugin/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginListParams {
    /// Directories whose repositories' own marketplaces are listed too.
    #[serde(default)]
    pub cwds: Option<Vec<PathBuf>>,
    /// Fetch again instead of using a cached copy (local marketplaces are always read fresh).
    #[serde(default)]
    pub force_refetch: Option<bool>,
    /// Which kinds of marketplace to list (`local` and the remote kinds).
    #[serde(default)]
    pub marketplace_kinds: Option<Vec<String>>,
}

/// Result of `plugin/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginListResponse {
    /// The marketplaces and their plugins.
    pub marketplaces: Vec<PluginMarketplaceEntry>,
    /// Marketplaces that failed to load.
    #[serde(default)]
    pub marketplace_load_errors: Vec<MarketplaceLoadErrorInfo>,
    /// Plugins a client may feature (none without a remote catalogue).
    #[serde(default)]
    pub featured_plugin_ids: Vec<String>,
}

/// Params of `plugin/installed`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstalledParams {
    /// Directories whose repositories' own marketplaces count too.
    #[serde(default)]
    pub cwds: Option<Vec<PathBuf>>,
    /// Plugins the client may suggest installing.
    #[serde(default)]
    pub install_suggestion_plugin_names: Option<Vec<String>>,
}

/// Result of `plugin/installed`: `plugin/list` narrowed to installed plugins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstalledResponse {
    /// Marketplaces with at least one installed plugin, and those plugins.
    pub marketplaces: Vec<PluginMarketplaceEntry>,
    /// Marketplaces that failed to load.
    #[serde(default)]
    pub marketplace_load_errors: Vec<MarketplaceLoadErrorInfo>,
}

/// One marketplace and its plugins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginMarketplaceEntry {
    /// Its name.
    pub name: String,
    /// Its manifest file.
    pub path: Option<PathBuf>,
    /// How clients show it.
    pub interface: Option<MarketplaceInterface>,
    /// Its plugins.
    pub plugins: Vec<PluginSummary>,
}

/// How a client shows a marketplace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceInterface {
    /// The name shown.
    pub display_name: Option<String>,
}

/// A marketplace that failed to load, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceLoadErrorInfo {
    /// Its manifest (or root).
    pub marketplace_path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// Where a plugin's files come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PluginSourceInfo {
    /// A directory.
    #[serde(rename_all = "camelCase")]
    Local {
        /// The directory.
        path: PathBuf,
    },
    /// A git repository.
    #[serde(rename_all = "camelCase")]
    Git {
        /// The repository.
        url: String,
        /// The plugin's directory inside it.
        path: Option<String>,
        /// The ref to check out.
        ref_name: Option<String>,
        /// The commit.
        sha: Option<String>,
    },
    /// An npm package.
    #[serde(rename_all = "camelCase")]
    Npm {
        /// The package.
        package: String,
        /// Its registry.
        registry: Option<String>,
        /// Its version or range.
        version: Option<String>,
    },
    /// A remote catalogue's plugin.
    Remote,
}

/// How a client shows a plugin (its manifest's `interface`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInterface {
    /// The name shown.
    pub display_name: Option<String>,
    /// A one-line summary.
    pub short_description: Option<String>,
    /// The full description.
    pub long_description: Option<String>,
    /// Who made it.
    pub developer_name: Option<String>,
    /// Its category.
    pub category: Option<String>,
    /// What it can do, as labels.
    pub capabilities: Vec<String>,
    /// Its website.
    pub website_url: Option<String>,
    /// Its privacy policy.
    pub privacy_policy_url: Option<String>,
    /// Its terms of service.
    pub terms_of_service_url: Option<String>,
    /// Prompts a client may suggest.
    pub default_prompt: Option<Vec<String>>,
    /// Its colour.
    pub brand_color: Option<String>,
    /// Its composer icon file.
    pub composer_icon: Option<PathBuf>,
    /// Its composer icon URL.
    pub composer_icon_url: Option<String>,
    /// Its logo file.
    pub logo: Option<PathBuf>,
    /// Its dark logo file.
    pub logo_dark: Option<PathBuf>,
    /// Its logo URL.
    pub logo_url: Option<String>,
    /// Its dark logo URL.
    pub logo_url_dark: Option<String>,
    /// Screenshot files.
    pub screenshots: Vec<PathBuf>,
    /// Screenshot URLs.
    pub screenshot_urls: Vec<String>,
}

/// One plugin of a marketplace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSummary {
    /// `PLUGIN@MARKETPLACE`.
    pub id: String,
    /// A remote catalogue's id (never, in Keel).
    pub remote_plugin_id: Option<String>,
    /// The remote catalogue's version (never, in Keel).
    pub version: Option<String>,
    /// The version its manifest gives.
    pub local_version: Option<String>,
    /// Its name.
    pub name: String,
    /// Sharing details (never, in Keel).
    pub share_context: Option<serde_json::Value>,
    /// Where its files come from.
    pub source: PluginSourceInfo,
    /// Whether it is installed.
    pub installed: bool,
    /// When it was installed (seconds since the epoch), if known.
    pub installed_at: Option<i64>,
    /// Whether it is installed and in use.
    pub enabled: bool,
    /// `NOT_AVAILABLE`, `AVAILABLE` or `INSTALLED_BY_DEFAULT`.
    pub install_policy: String,
    /// Who set the install policy (never, in Keel).
    pub install_policy_source: Option<String>,
    /// Whether a client must show an interstitial first (never, in Keel).
    pub must_show_installation_interstitial: Option<bool>,
    /// `ON_INSTALL` or `ON_USE`.
    pub auth_policy: String,
    /// `AVAILABLE` (administrators cannot disable plugins in Keel).
    pub availability: String,
    /// Why it is disabled (never, in Keel).
    pub disabled_reason: Option<String>,
    /// Plans it is for (never, in Keel).
    pub eligible_plan_types: Option<Vec<String>>,
    /// How clients show it.
    pub interface: Option<PluginInterface>,
    /// Search words.
    pub keywords: Vec<String>,
}

/// Params of `plugin/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginReadParams {
    /// The plugin's name in its marketplace.
    pub plugin_name: String,
    /// The marketplace's manifest file (absolute).
    #[serde(default)]
    pub marketplace_path: Option<PathBuf>,
    /// A remote catalogue's marketplace (needs a ChatGPT account).
    #[serde(default)]
    pub remote_marketplace_name: Option<String>,
}

/// Result of `plugin/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginReadResponse {
    /// The plugin.
    pub plugin: PluginDetail,
}

/// One plugin in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginDetail {
    /// Its marketplace's name.
    pub marketplace_name: String,
    /// Its marketplace's manifest.
    pub marketplace_path: Option<PathBuf>,
    /// As listed.
    pub summary: PluginSummary,
    /// A share link (never, in Keel).
    pub share_url: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// Its skills.
    pub skills: Vec<PluginSkillSummary>,
    /// The skill to start with (never, in Keel).
    pub onboarding_skill: Option<PluginSkillSummary>,
    /// Its hooks.
    pub hooks: Vec<PluginHookSummary>,
    /// Its apps (none: apps need a ChatGPT account).
    pub apps: Vec<serde_json::Value>,
    /// Its app templates (none).
    pub app_templates: Vec<serde_json::Value>,
    /// The names of its MCP servers.
    pub mcp_servers: Vec<String>,
    /// Its scheduled tasks (never, in Keel).
    pub scheduled_tasks: Option<Vec<serde_json::Value>>,
}

/// One skill of a plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSkillSummary {
    /// `PLUGIN:SKILL`.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// A one-line summary.
    pub short_description: Option<String>,
    /// How clients show it (never, in Keel).
    pub interface: Option<serde_json::Value>,
    /// Its `SKILL.md`.
    pub path: Option<String>,
    /// Whether it is offered.
    pub enabled: bool,
}

/// One hook of a plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginHookSummary {
    /// The key its trust is recorded under.
    pub key: String,
    /// When it runs (`preToolUse`, …).
    pub event_name: String,
}

/// Params of `plugin/install`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstallParams {
    /// The plugin's name in its marketplace.
    pub plugin_name: String,
    /// The marketplace's manifest file (absolute).
    #[serde(default)]
    pub marketplace_path: Option<PathBuf>,
    /// A remote catalogue's marketplace (needs a ChatGPT account).
    #[serde(default)]
    pub remote_marketplace_name: Option<String>,
    /// The client's id for this attempt.
    #[serde(default)]
    pub install_attempt_id: Option<String>,
}

/// Result of `plugin/install`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInstallResponse {
    /// `ON_INSTALL` or `ON_USE`.
    pub auth_policy: String,
    /// Apps to sign in to (none: apps need a ChatGPT account).
    pub apps_needing_auth: Vec<serde_json::Value>,
}

/// Params of `plugin/uninstall`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginUninstallParams {
    /// `PLUGIN@MARKETPLACE`.
    pub plugin_id: String,
}

/// Params of `plugin/skill/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSkillReadParams {
    /// The remote catalogue's marketplace.
    pub remote_marketplace_name: String,
    /// The remote plugin.
    pub remote_plugin_id: String,
    /// The skill.
    pub skill_name: String,
}

/// Result of `plugin/skill/read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginSkillReadResponse {
    /// The skill's text.
    pub contents: Option<String>,
}

/// Params of `plugin/reconcile`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginReconcileParams {
    /// Why the client asks.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Result of `plugin/reconcile`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginReconcileResponse {
    /// Plugins that changed.
    pub changed_plugins: Vec<serde_json::Value>,
    /// Remote plugins that could not be read.
    pub failed_remote_plugin_ids: Vec<String>,
    /// Remote plugins that could not be installed.
    pub failed_materialization_remote_plugin_ids: Vec<String>,
}

/// Params of `marketplace/add`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceAddParams {
    /// A directory, `owner/repo[@ref]`, or a git URL.
    pub source: String,
    /// The git ref to check out.
    #[serde(default)]
    pub ref_name: Option<String>,
    /// Paths of a sparse git checkout.
    #[serde(default)]
    pub sparse_paths: Option<Vec<String>>,
}

/// Result of `marketplace/add`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceAddResponse {
    /// Its name, from its manifest.
    pub marketplace_name: String,
    /// Where its files are.
    pub installed_root: PathBuf,
    /// It was already added from this source.
    pub already_added: bool,
}

/// Params of `marketplace/remove`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceRemoveParams {
    /// The marketplace.
    pub marketplace_name: String,
}

/// Result of `marketplace/remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceRemoveResponse {
    /// The marketplace.
    pub marketplace_name: String,
    /// The clone deleted, for a git marketplace.
    pub installed_root: Option<PathBuf>,
}

/// Params of `marketplace/upgrade`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceUpgradeParams {
    /// The marketplace; every git marketplace when absent.
    #[serde(default)]
    pub marketplace_name: Option<String>,
}

/// Result of `marketplace/upgrade`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceUpgradeResponse {
    /// The git marketplaces looked at.
    pub selected_marketplaces: Vec<String>,
    /// The clones that moved to a new commit.
    pub upgraded_roots: Vec<PathBuf>,
    /// The ones that failed.
    pub errors: Vec<MarketplaceUpgradeErrorInfo>,
}

/// A marketplace that failed to upgrade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceUpgradeErrorInfo {
    /// The marketplace.
    pub marketplace_name: String,
    /// What went wrong.
    pub message: String,
}
