//! `externalAgentConfig/import*`: bringing another agent's setup (Claude Code's `CLAUDE.md`
//! and the like) into Keel, and the record of past imports.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What kind of setup an item moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExternalAgentConfigMigrationItemType {
    /// Instructions (`CLAUDE.md` to `AGENTS.md`).
    AgentsMd,
    /// Settings.
    Config,
    /// Skills.
    Skills,
    /// Plugins.
    Plugins,
    /// MCP servers.
    McpServerConfig,
    /// Sub-agents.
    Subagents,
    /// Hooks.
    Hooks,
    /// Slash commands.
    Commands,
    /// Memory.
    Memory,
    /// Past sessions.
    Sessions,
}

impl ExternalAgentConfigMigrationItemType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgentsMd => "AGENTS_MD",
            Self::Config => "CONFIG",
            Self::Skills => "SKILLS",
            Self::Plugins => "PLUGINS",
            Self::McpServerConfig => "MCP_SERVER_CONFIG",
            Self::Subagents => "SUBAGENTS",
            Self::Hooks => "HOOKS",
            Self::Commands => "COMMANDS",
            Self::Memory => "MEMORY",
            Self::Sessions => "SESSIONS",
        }
    }
}

/// One thing to import, as `externalAgentConfig/detect` offers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigMigrationItem {
    /// What kind.
    pub item_type: ExternalAgentConfigMigrationItemType,
    /// What it is, for a person.
    pub description: String,
    /// The project it belongs to (`null`: the home setup).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Which parts (kept as given).
    #[serde(default)]
    pub details: Option<serde_json::Value>,
}

/// Params of `externalAgentConfig/import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportParams {
    /// What to import.
    pub migration_items: Vec<ExternalAgentConfigMigrationItem>,
    /// The other agent.
    #[serde(default)]
    pub provider_id: Option<String>,
    /// Where the import was started from.
    #[serde(default)]
    pub migration_source: Option<String>,
    /// Kept for older clients.
    #[serde(default)]
    pub source: Option<String>,
}

/// Result of `externalAgentConfig/import` and `.../recordHistory`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportResponse {
    /// The import's id; progress and completion notifications carry it.
    pub import_id: String,
}

/// Something imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportItemTypeSuccess {
    /// What kind.
    pub item_type: ExternalAgentConfigMigrationItemType,
    /// The project.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Read from.
    #[serde(default)]
    pub source: Option<String>,
    /// Written to.
    #[serde(default)]
    pub target: Option<String>,
}

/// Something not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportItemTypeFailure {
    /// What kind.
    pub item_type: ExternalAgentConfigMigrationItemType,
    /// At which step it failed.
    pub failure_stage: String,
    /// Why.
    pub message: String,
    /// A category for programs.
    #[serde(default)]
    pub error_type: Option<String>,
    /// A finer category.
    #[serde(default)]
    pub sub_error_type: Option<String>,
    /// The project.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Read from.
    #[serde(default)]
    pub source: Option<String>,
}

/// The results of one kind of item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportTypeResult {
    /// What kind.
    pub item_type: ExternalAgentConfigMigrationItemType,
    /// What was imported.
    pub successes: Vec<ExternalAgentConfigImportItemTypeSuccess>,
    /// What was not.
    pub failures: Vec<ExternalAgentConfigImportItemTypeFailure>,
}

/// `externalAgentConfig/import/progress` (one item done) and `.../completed` (all of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportNotification {
    /// The import.
    pub import_id: String,
    /// Its results so far (progress) or all of them (completed).
    pub item_type_results: Vec<ExternalAgentConfigImportTypeResult>,
}

/// Params of `externalAgentConfig/import/recordHistory`: an import a client made itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportHistoryRecordParams {
    /// The other agent.
    pub provider_id: String,
    /// What came of it.
    pub item_type_results: Vec<ExternalAgentConfigImportTypeResult>,
}

/// A past import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportHistory {
    /// Its id.
    pub import_id: String,
    /// The other agent.
    pub provider_id: Option<String>,
    /// When it ended, Unix milliseconds.
    pub completed_at_ms: i64,
    /// What was imported.
    pub successes: Vec<ExternalAgentConfigImportItemTypeSuccess>,
    /// What was not.
    pub failures: Vec<ExternalAgentConfigImportItemTypeFailure>,
}

/// Result of `externalAgentConfig/import/readHistories`: newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentConfigImportHistoriesReadResponse {
    /// Past imports.
    pub data: Vec<ExternalAgentConfigImportHistory>,
    /// Connectors other agents use that could be set up (none).
    pub connectors: Vec<serde_json::Value>,
}
