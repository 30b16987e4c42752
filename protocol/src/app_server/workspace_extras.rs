//! What a client lists per workspace besides threads: hooks, skills and collaboration modes
//! (plugins have their own module); the one collaboration mode is the default.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Params of `hooks/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksListParams {
    /// The directories to list for.
    #[serde(default)]
    pub cwds: Vec<String>,
    /// The thread asking, if any.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// One directory's hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HooksListEntry {
    /// The directory.
    pub cwd: String,
    /// The hooks a thread started there would have, in display order.
    pub hooks: Vec<HookMetadata>,
    /// Problems found loading them (files that did not parse, dropped groups).
    pub warnings: Vec<String>,
    /// Errors found loading them.
    pub errors: Vec<Value>,
}

/// One configured hook, as a client shows it and the user trusts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookMetadata {
    /// The name its trust is recorded under (`[hooks.state."KEY"]`).
    pub key: String,
    /// When it runs (`preToolUse`, ...).
    pub event_name: String,
    /// `command` for the hooks Keel runs.
    pub handler_type: String,
    /// The command line.
    pub command: String,
    /// Fire and forget.
    #[serde(rename = "async")]
    pub is_async: bool,
    /// Which tool (or source) it applies to; `null` for all.
    pub matcher: Option<String>,
    /// Seconds before it is stopped.
    pub timeout_sec: u64,
    /// Tokens of its `additionalContext` kept in the history before the rest goes to a file
    /// (`null`: 2,500; `0`: no limit).
    #[serde(default)]
    pub additional_context_limit: Option<u64>,
    /// What a client shows while it runs.
    pub status_message: Option<String>,
    /// Where it was defined: `user`, `project` or `plugin`.
    pub source: String,
    /// The file it was defined in.
    pub source_path: String,
    /// Its place among all hooks.
    pub display_order: u64,
    /// `false` when the user turned it off.
    pub enabled: bool,
    /// Whether it is imposed by an administrator (never, in Keel).
    pub is_managed: bool,
    /// `sha256:…` of its definition; trusting it records this.
    pub current_hash: String,
    /// `trusted`, `untrusted` or `modified`.
    pub trust_status: String,
    /// The installed plugin that brought it (`PLUGIN@MARKETPLACE`).
    #[serde(default)]
    pub plugin_id: Option<String>,
}

/// Result of `hooks/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HooksListResponse {
    /// One entry per asked directory.
    pub data: Vec<HooksListEntry>,
}

/// Params of `skills/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsListParams {
    /// The directories to list for.
    #[serde(default)]
    pub cwds: Vec<String>,
    /// Re-read instead of using a cache.
    #[serde(default)]
    pub force_reload: bool,
}

/// One directory's skills.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsListEntry {
    /// The directory.
    pub cwd: String,
    /// The skills a thread started there is offered.
    pub skills: Vec<SkillMetadata>,
    /// `SKILL.md` files that could not be loaded, and why.
    pub errors: Vec<SkillErrorInfo>,
}

/// Where a skill was found, which decides who may change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SkillScope {
    /// The user's own skills folder.
    User,
    /// The repository being worked in (loaded for trusted projects only).
    Repo,
    /// Shipped with the program.
    System,
    /// Installed by an administrator for every user.
    Admin,
}

/// A skill a client can show or a user can name with `$name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillMetadata {
    /// The name the model and the user refer to it by.
    pub name: String,
    /// When to use it, as its front matter says.
    pub description: String,
    /// A one-line summary for lists, when the skill gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    /// Its `SKILL.md`.
    pub path: String,
    /// Where it was found.
    pub scope: SkillScope,
    /// Whether it is offered (a user may turn a skill off).
    pub enabled: bool,
    /// The installed plugin that brought it (`PLUGIN@MARKETPLACE`).
    #[serde(default)]
    pub plugin_id: Option<String>,
}

/// A `SKILL.md` that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillErrorInfo {
    /// The file.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

/// Params of `skills/config/write`: turn one skill on or off, chosen by name or by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsConfigWriteParams {
    /// On or off.
    pub enabled: bool,
    /// The skill's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The skill's `SKILL.md` (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Result of `skills/config/write`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillsConfigWriteResponse {
    /// Whether the skill is now on.
    pub effective_enabled: bool,
}

/// `skills/changed`: the skills on disk changed; clients list them again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsChangedNotification {}

/// Result of `skills/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkillsListResponse {
    /// One entry per asked directory.
    pub data: Vec<SkillsListEntry>,
}

/// One collaboration mode a client may pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationModeMask {
    /// Display name.
    pub name: String,
    /// The mode's id.
    pub mode: String,
    /// The model it uses, when it fixes one.
    pub model: Option<String>,
    /// The reasoning effort it uses, when it fixes one.
    pub reasoning_effort: Option<crate::ReasoningEffort>,
}

/// Result of `collaborationMode/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CollaborationModeListResponse {
    /// The modes.
    pub data: Vec<CollaborationModeMask>,
}
