//! A hook's run as clients see it: `hook/started` when it starts and `hook/completed` with
//! what it decided, in Codex 0.169's shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One run of one hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunSummary {
    /// `<event>:<displayOrder>:<sourcePath>`, with `:<callId>` for tool events.
    pub id: String,
    /// The event (`preToolUse`, ...).
    pub event_name: String,
    /// `command`.
    pub handler_type: String,
    /// `sync` (waited for) or `async`.
    pub execution_mode: String,
    /// `turn` or `thread`.
    pub scope: String,
    /// The file the hook is defined in.
    pub source_path: String,
    /// `user` or `project`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The hook's place among all hooks.
    pub display_order: u64,
    /// What a client shows while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Unix seconds.
    pub started_at: u64,
    /// Unix seconds, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<u64>,
    /// How long it ran, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `running`, `completed`, `failed`, `blocked` or `stopped`.
    pub status: String,
    /// What it said: `feedback` (a block's reason), `stop`, `context`, `warning`, `error`.
    pub entries: Vec<HookOutputEntry>,
}

/// One thing a hook said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HookOutputEntry {
    /// `warning`, `stop`, `feedback`, `context` or `error`.
    pub kind: String,
    /// The text.
    pub text: String,
}

/// Params of `hook/started` and `hook/completed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunNotification {
    /// The thread the hook ran for.
    pub thread_id: String,
    /// The turn, when the event belongs to one.
    pub turn_id: Option<String>,
    /// The run.
    pub run: HookRunSummary,
}
