//! `session/update` in v2: chunks carry the id of the message they belong to, a tool call is
//! one upsert (`tool_call_update`) from its announcement to its end, a diff lists its changes
//! with the patch, a plan has an id, and the session's state (running, idle with why) is an
//! update of its own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::JsonRpcErrorObject;
use crate::acp::{
    ContentBlock, PermissionOption, PlanEntry, ToolCallLocation, ToolCallStatus, ToolKind,
};

/// `session/update` (v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session.
    pub session_id: String,
    /// What changed.
    pub update: SessionUpdate,
}

/// One change to a session, as the editor shows it (v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// Part of a user message (a replay).
    UserMessageChunk(ContentChunk),
    /// Part of the agent's answer.
    AgentMessageChunk(ContentChunk),
    /// Part of the agent's reasoning.
    AgentThoughtChunk(ContentChunk),
    /// The session started or stopped working.
    StateUpdate(StateUpdate),
    /// A tool call, announced or changed.
    ToolCallUpdate(ToolCallUpdate),
    /// The whole plan.
    PlanUpdate {
        /// The plan.
        plan: PlanContent,
    },
    /// The slash commands the session takes.
    #[serde(rename_all = "camelCase")]
    AvailableCommandsUpdate {
        /// Every command.
        available_commands: Vec<AvailableCommand>,
    },
    /// The pickers changed.
    #[serde(rename_all = "camelCase")]
    ConfigOptionUpdate {
        /// Every picker as it is now.
        config_options: Vec<SessionConfigOption>,
    },
    /// The session's title changed.
    SessionInfoUpdate {
        /// The title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// How much of the model's context window is in use.
    UsageUpdate {
        /// Tokens in use.
        used: u64,
        /// The window.
        size: u64,
    },
}

/// A piece of a message (v2: with the message's id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    /// The message it belongs to (ids are per message kind).
    pub message_id: String,
    /// The piece.
    pub content: ContentBlock,
}

/// Whether the session is working.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum StateUpdate {
    /// A turn runs.
    Running {},
    /// Nothing runs; when a turn just ended, why.
    #[serde(rename_all = "camelCase")]
    Idle {
        /// `end_turn`, `cancelled`, `error`, ...; absent for a snapshot with no ending.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// What went wrong, with `stopReason` `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<JsonRpcErrorObject>,
    },
}

/// A tool call's announcement or change (v2: one upsert; absent members are unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// The call.
    pub tool_call_id: String,
    /// What it does, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// How it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    /// What it shows.
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

/// What a tool call shows (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    /// Content (its output as text).
    Content {
        /// The content.
        content: ContentBlock,
    },
    /// Files changed, and the patch that shows how.
    Diff {
        /// Each file's change.
        changes: Vec<DiffChange>,
        /// The changes as a patch.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        patch: Option<DiffPatch>,
    },
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum DiffChange {
    /// A new file.
    Add {
        /// The file (absolute).
        path: String,
    },
    /// A removed file.
    Delete {
        /// The file (absolute).
        path: String,
    },
    /// A changed file.
    Modify {
        /// The file (absolute).
        path: String,
    },
}

/// Changes as patch text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffPatch {
    /// `git_patch`.
    pub format: String,
    /// The patch.
    pub text: String,
}

/// A plan's content (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanContent {
    /// A list of steps.
    #[serde(rename_all = "camelCase")]
    Items {
        /// The plan (one per session: Keel's model keeps one plan).
        plan_id: String,
        /// Its steps.
        entries: Vec<PlanEntry>,
    },
}

/// A slash command (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AvailableCommand {
    /// A command typed as `/name input`.
    Command {
        /// Its name.
        name: String,
        /// What it does.
        description: String,
        /// What it takes after its name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<CommandInput>,
    },
}

/// What a command takes (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CommandInput {
    /// The text after the command's name.
    Text {
        /// What to type.
        hint: String,
    },
}

/// A picker (v2: `configId`, a select of values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigOption {
    /// The picker's id.
    pub config_id: String,
    /// Its name.
    pub name: String,
    /// What it changes, as the editor groups pickers (`mode`, `model`, `thought_level`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `select`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The value chosen.
    pub current_value: String,
    /// The values to choose from.
    pub options: Vec<SessionConfigSelectOption>,
}

/// A value of a picker (v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigSelectOption {
    /// The value.
    pub value: String,
    /// Its name.
    pub name: String,
}

/// `session/request_permission` (v2: a title, and what the permission is for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    /// The session.
    pub session_id: String,
    /// What is asked, for people.
    pub title: String,
    /// The tool call it is for.
    pub subject: PermissionSubject,
    /// The answers offered.
    pub options: Vec<PermissionOption>,
}

/// What a permission is for (v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PermissionSubject {
    /// A tool call (a command or a patch).
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call as it would run.
        tool_call: ToolCallUpdate,
    },
}
