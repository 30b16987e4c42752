//! One model as the catalogue knows it, in the field names of Codex's catalogue files
//! (`codex debug models`, `model_catalog_json`), so a Codex user's file reads unchanged.
//! Fields Keel has no use for are ignored; every field but `slug` has a default, so a file
//! may correct one fact of a built-in entry without repeating the others.

use keel_protocol::ReasoningEffort;
use serde::{Deserialize, Serialize};

/// The facts Keel drives one model by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// The name sent to the provider.
    pub slug: String,
    /// The name pickers show.
    #[serde(default)]
    pub display_name: Option<String>,
    /// One line for pickers.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether pickers list it (`list`) or only accept it by name (`hide`).
    #[serde(default)]
    pub visibility: Option<Visibility>,
    /// Picker order, lowest first.
    #[serde(default)]
    pub priority: Option<i64>,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The share of the window usable for history, in percent (the rest is headroom).
    #[serde(default)]
    pub effective_context_window_percent: Option<u8>,
    /// The effort sent when the user names none.
    #[serde(default)]
    pub default_reasoning_level: Option<ReasoningEffort>,
    /// The efforts the model accepts, in order.
    #[serde(default)]
    pub supported_reasoning_levels: Option<Vec<EffortOption>>,
    /// The reasoning summary asked for when the user names none.
    #[serde(default)]
    pub default_reasoning_summary: Option<crate::reasoning_settings::ReasoningSummaryMode>,
    /// Takes `text.verbosity`.
    #[serde(default)]
    pub support_verbosity: Option<bool>,
    /// The verbosity sent when the user names none.
    #[serde(default)]
    pub default_verbosity: Option<crate::reasoning_settings::Verbosity>,
    /// Which command tools the model was trained on.
    #[serde(default)]
    pub shell_type: Option<ShellType>,
    /// Which form of `apply_patch` the model was trained on.
    #[serde(default)]
    pub apply_patch_tool_type: Option<ApplyPatchToolType>,
    /// How much of a tool's output the model reads back.
    #[serde(default)]
    pub truncation_policy: Option<TruncationPolicy>,
    /// What the model accepts as input (`text`, `image`).
    #[serde(default)]
    pub input_modalities: Option<Vec<String>>,
    /// How tools are offered: classically, or only through code mode's `exec`.
    #[serde(default)]
    pub tool_mode: Option<ToolMode>,
    /// Sent in the lighter Responses shape (with its header and reasoning context).
    #[serde(default)]
    pub use_responses_lite: Option<bool>,
    /// Which multi-agent tool set the model knows (`v1`, `v2`).
    #[serde(default)]
    pub multi_agent_version: Option<String>,
    /// Processing tiers beyond the default, by short name (`fast`).
    #[serde(default)]
    pub additional_speed_tiers: Option<Vec<String>>,
    /// Processing tiers, as pickers show them.
    #[serde(default)]
    pub service_tiers: Option<Vec<ServiceTierOption>>,
    /// The model a picker suggests instead.
    #[serde(default)]
    pub upgrade: Option<ModelUpgrade>,
    /// Tools beyond the usual set this model was trained on (`clock`,
    /// `request_user_input_async`, …).
    #[serde(default)]
    pub experimental_supported_tools: Option<Vec<String>>,
}

/// Whether pickers show a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Listed.
    List,
    /// Accepted by name, not listed.
    Hide,
}

/// One effort a model accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffortOption {
    /// The effort.
    pub effort: ReasoningEffort,
    /// What choosing it means, for pickers.
    #[serde(default)]
    pub description: String,
}

/// The command tools a model was trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellType {
    /// `exec_command` and `write_stdin`.
    UnifiedExec,
    /// The one-shot `shell` function.
    #[serde(alias = "default", alias = "local")]
    Shell,
    /// `shell_command`, a command line as one string (offered as `shell` by Keel).
    ShellCommand,
    /// No command tool.
    Disabled,
}

/// The form of `apply_patch` a model was trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyPatchToolType {
    /// A custom tool whose input is the patch text.
    Freeform,
    /// A function tool with the patch in a JSON argument.
    Function,
}

/// How tools reach a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// Each tool is offered on its own.
    Classic,
    /// One `exec` tool runs the model's JavaScript, which calls the other tools.
    CodeModeOnly,
}

/// How a tool's output is cut before the model reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncationPolicy {
    /// What `limit` counts.
    pub mode: TruncationMode,
    /// The most the model reads.
    pub limit: u64,
}

/// The unit of a truncation limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncationMode {
    /// Tokens (about four bytes each).
    Tokens,
    /// Bytes.
    Bytes,
}

/// A processing tier a picker offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceTierOption {
    /// The tier's id (`priority`).
    pub id: String,
    /// Its name in pickers.
    pub name: String,
    /// What it costs and gives.
    #[serde(default)]
    pub description: String,
}

/// The model a picker suggests in place of an older one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUpgrade {
    /// The suggested model's slug.
    pub model: String,
}

impl ModelEntry {
    /// An entry with nothing known but its name.
    pub fn named(slug: &str) -> Self {
        Self {
            slug: slug.to_string(),
            display_name: None,
            description: None,
            visibility: None,
            priority: None,
            context_window: None,
            effective_context_window_percent: None,
            default_reasoning_level: None,
            supported_reasoning_levels: None,
            default_reasoning_summary: None,
            support_verbosity: None,
            default_verbosity: None,
            shell_type: None,
            apply_patch_tool_type: None,
            truncation_policy: None,
            input_modalities: None,
            tool_mode: None,
            use_responses_lite: None,
            multi_agent_version: None,
            additional_speed_tiers: None,
            service_tiers: None,
            upgrade: None,
            experimental_supported_tools: None,
        }
    }

    /// This entry with every fact `correction` states replaced by the correction's.
    pub(crate) fn corrected_by(mut self, correction: ModelEntry) -> Self {
        macro_rules! take {
            ($($field:ident),* $(,)?) => {
                $(if correction.$field.is_some() {
                    self.$field = correction.$field;
                })*
            };
        }
        take!(
            display_name,
            description,
            visibility,
            priority,
            context_window,
            effective_context_window_percent,
            default_reasoning_level,
            supported_reasoning_levels,
            default_reasoning_summary,
            support_verbosity,
            default_verbosity,
            shell_type,
            apply_patch_tool_type,
            truncation_policy,
            input_modalities,
            tool_mode,
            use_responses_lite,
            multi_agent_version,
            additional_speed_tiers,
            service_tiers,
            upgrade,
            experimental_supported_tools,
        );
        self
    }

    /// Whether pickers list it.
    pub fn is_listed(&self) -> bool {
        self.visibility != Some(Visibility::Hide)
    }

    /// Whether tools reach the model only through code mode's `exec`.
    pub fn is_code_mode(&self) -> bool {
        self.tool_mode == Some(ToolMode::CodeModeOnly)
    }

    /// Whether the model trained on `tool` (one of `experimental_supported_tools`).
    pub fn knows_tool(&self, tool: &str) -> bool {
        self.experimental_supported_tools
            .as_deref()
            .is_some_and(|tools| tools.iter().any(|known| known == tool))
    }
}
