//! The JSON Lines stream of `keel exec --json`, in the format of `codex exec --json` (Codex
//! 0.169), so that scripts and SDKs written for Codex read Keel's output unchanged.
//!
//! One [`ExecEvent`] per line: `thread.started`, then per turn `turn.started`, items
//! (`item.started` / `item.updated` / `item.completed`), and `turn.completed` or
//! `turn.failed`; `error` for a problem that does not (yet) end the turn.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ExecEvent {
    /// The thread the run works in (new or resumed); first line of the stream.
    #[serde(rename = "thread.started")]
    ThreadStarted {
        /// Pass to `keel exec resume` to continue it.
        thread_id: String,
    },
    /// The model starts working on the prompt.
    #[serde(rename = "turn.started")]
    TurnStarted {},
    /// The turn ended normally.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// Tokens the turn used.
        usage: ExecUsage,
    },
    /// The turn ended with an error.
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// What went wrong.
        error: ExecError,
    },
    /// Work began on an item (a command, a patch, a tool call).
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The item so far.
        item: ExecItem,
    },
    /// An item in progress changed (a to-do list).
    #[serde(rename = "item.updated")]
    ItemUpdated {
        /// The item now.
        item: ExecItem,
    },
    /// An item is final.
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The item as it ended.
        item: ExecItem,
    },
    /// A problem worth telling (a retry, a lost stream); the turn goes on unless a
    /// `turn.failed` follows.
    #[serde(rename = "error")]
    Error {
        /// What happened.
        message: String,
    },
}

/// Tokens one turn used (the sum over its model requests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Of which served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the provider's cache (0 where providers do not say).
    pub cache_write_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Of which spent reasoning.
    pub reasoning_output_tokens: u64,
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecError {
    /// The reason, as a person reads it.
    pub message: String,
}

/// An item of the stream: its id (`item_0`, `item_1`, … in the order items appear) and
/// what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecItem {
    /// Stable across the item's started / updated / completed lines.
    pub id: String,
    /// The item itself.
    #[serde(flatten)]
    pub details: ExecItemDetails,
}

/// The kinds of item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecItemDetails {
    /// Text the agent wrote (the last one of a turn is its answer).
    AgentMessage {
        /// The text.
        text: String,
    },
    /// The model's reasoning summary.
    Reasoning {
        /// The text.
        text: String,
    },
    /// A command the agent ran.
    CommandExecution {
        /// The command line as run.
        command: String,
        /// Its output (stdout and stderr interleaved); empty until it ends.
        aggregated_output: String,
        /// `None` while running or when it never ran.
        exit_code: Option<i32>,
        /// Where it stands.
        status: ExecCommandStatus,
    },
    /// A patch the agent applied.
    FileChange {
        /// The files it touches.
        changes: Vec<ExecFileChange>,
        /// Where it stands.
        status: ExecPatchStatus,
    },
    /// A call to a tool of an MCP server.
    McpToolCall {
        /// The server's name in config.
        server: String,
        /// The tool.
        tool: String,
        /// The arguments the model gave.
        arguments: serde_json::Value,
        /// What the tool answered, once it did.
        result: Option<serde_json::Value>,
        /// Why the call failed, if it did.
        error: Option<ExecError>,
        /// Where it stands.
        status: ExecToolStatus,
    },
    /// A web search the model ran.
    WebSearch {
        /// What was searched for.
        query: String,
    },
    /// The agent's plan, as a to-do list.
    TodoList {
        /// The steps.
        items: Vec<ExecTodoItem>,
    },
    /// A non-fatal problem worth showing (a configuration warning, a failed side task).
    Error {
        /// What happened.
        message: String,
    },
}

/// Where a command stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecCommandStatus {
    /// Running.
    InProgress,
    /// Exited with status 0.
    Completed,
    /// Exited with another status, or could not run.
    Failed,
    /// Refused before it ran (by policy or by the user).
    Declined,
}

/// Where a patch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecPatchStatus {
    /// Being applied.
    InProgress,
    /// Applied.
    Completed,
    /// Not applied.
    Failed,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecToolStatus {
    /// Running.
    InProgress,
    /// Answered.
    Completed,
    /// Failed.
    Failed,
}

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecFileChange {
    /// The file (absolute).
    pub path: std::path::PathBuf,
    /// What happens to it.
    pub kind: ExecFileChangeKind,
}

/// What a patch does to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecFileChangeKind {
    /// Created.
    Add,
    /// Removed.
    Delete,
    /// Changed (or moved).
    Update,
}

/// One step of a to-do list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecTodoItem {
    /// The step.
    pub text: String,
    /// Whether it is done.
    pub completed: bool,
}
