//! `session/update`: what the agent streams to the editor during a session.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ContentBlock;

/// `session/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session.
    pub session_id: String,
    /// What happened.
    pub update: SessionUpdate,
}

/// What happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// Part of the person's message (when a session is replayed).
    UserMessageChunk(ContentChunk),
    /// Part of the agent's answer.
    AgentMessageChunk(ContentChunk),
    /// Part of the agent's reasoning.
    AgentThoughtChunk(ContentChunk),
    /// A tool call began.
    ToolCall(ToolCall),
    /// A tool call changed.
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan.
    Plan(Plan),
    /// The session's mode changed.
    #[serde(rename_all = "camelCase")]
    CurrentModeUpdate {
        /// The mode now.
        current_mode_id: String,
    },
    /// The session's title or last change.
    #[serde(rename_all = "camelCase")]
    SessionInfoUpdate {
        /// Its title (the thread's name).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// The commands the person may type as `/name` (Keel's own and the skills).
    #[serde(rename_all = "camelCase")]
    AvailableCommandsUpdate {
        /// Every command offered now.
        available_commands: Vec<AvailableCommand>,
    },
    /// Something the person should know that is not part of the conversation (sent only to an
    /// editor that shows notices).
    Notice(Notice),
    /// The session's agent started a sub-agent, a session of its own (unstable ACP; sent only
    /// to an editor that offers `subagents`).
    SubagentUpdate(SubagentUpdate),
    /// How full the model's context window is.
    UsageUpdate {
        /// Tokens the conversation takes.
        used: u64,
        /// The window's size.
        size: u64,
    },
    /// The session's pickers changed.
    #[serde(rename_all = "camelCase")]
    ConfigOptionUpdate {
        /// Every picker as it is now.
        config_options: Vec<super::SessionConfigOption>,
    },
}

/// A piece of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    /// The content.
    pub content: ContentBlock,
}

/// What a tool call does, for the editor's icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files.
    Read,
    /// Edits files.
    Edit,
    /// Deletes files.
    Delete,
    /// Moves files.
    Move,
    /// Searches.
    Search,
    /// Runs a command.
    Execute,
    /// Thinks.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Switches the session's mode.
    SwitchMode,
    /// Anything else.
    Other,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Waiting (for input or approval).
    Pending,
    /// Running.
    InProgress,
    /// Done.
    Completed,
    /// Failed (or was refused).
    Failed,
}

/// A tool call as it began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Its id (Keel's item id).
    pub tool_call_id: String,
    /// What people see.
    pub title: String,
    /// What it does.
    pub kind: ToolKind,
    /// Where it stands.
    pub status: ToolCallStatus,
    /// What it shows (output, diffs).
    #[serde(default)]
    pub content: Vec<ToolCallContent>,
    /// The files it touches.
    #[serde(default)]
    pub locations: Vec<ToolCallLocation>,
    /// Its input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<serde_json::Value>,
}

/// A change to a tool call: absent members stay as they were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// The tool call.
    pub tool_call_id: String,
    /// What people see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// Where it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// What it shows now (replaces the previous content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    /// The files it touches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
    /// Its input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<serde_json::Value>,
    /// Its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<serde_json::Value>,
}

/// What a tool call shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    /// Content (its output as text).
    Content {
        /// The content.
        content: ContentBlock,
    },
    /// A file's change.
    #[serde(rename_all = "camelCase")]
    Diff {
        /// The file (absolute).
        path: String,
        /// Its text before (`null`: a new file).
        old_text: Option<String>,
        /// Its text after.
        new_text: String,
    },
    /// A terminal of the editor's where the call's command runs (shown live).
    #[serde(rename_all = "camelCase")]
    Terminal {
        /// The terminal.
        terminal_id: String,
    },
}

/// A file a tool call touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallLocation {
    /// The file (absolute).
    pub path: String,
    /// A line in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// The agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Its steps.
    pub entries: Vec<PlanEntry>,
}

/// A step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanEntry {
    /// What the step is.
    pub content: String,
    /// `high`, `medium` or `low`.
    pub priority: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// A command the person may type as `/name`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableCommand {
    /// Its name, without the slash.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The text it takes after its name, when it takes any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<AvailableCommandInput>,
}

/// The text a command takes after its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableCommandInput {
    /// What to type, shown while nothing is typed.
    pub hint: String,
}

/// A notice for the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// `info`, `warning` or `error`.
    pub severity: String,
    /// What happened, in one line.
    pub title: String,
    /// More on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A sub-agent the session's agent started: announced on the parent session before any of its
/// own traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentUpdate {
    /// The sub-agent's session (a Keel thread id).
    pub session_id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where it works (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<std::path::PathBuf>,
}
