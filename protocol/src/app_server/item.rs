//! Thread items: the units a client renders, stable by id from `item/started` to
//! `item/completed`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One piece of user input, app-server spelling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Rich-text spans; accepted and kept, not interpreted.
        #[serde(default)]
        text_elements: Vec<serde_json::Value>,
    },
    /// An image by URL.
    Image {
        /// The image URL (or `data:` URL).
        url: String,
    },
    /// An image on disk.
    LocalImage {
        /// The image path.
        path: PathBuf,
    },
}

impl From<UserInput> for crate::InputItem {
    fn from(input: UserInput) -> Self {
        match input {
            UserInput::Text { text, .. } => Self::Text { text },
            UserInput::Image { url } => Self::Image { image_url: url },
            UserInput::LocalImage { path } => Self::LocalImage { path },
        }
    }
}

/// What a command appears to do, for compact display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum CommandAction {
    /// Reads a file.
    Read {
        /// The command text.
        command: String,
        /// The file name.
        name: String,
        /// The file path.
        path: String,
    },
    /// Lists files.
    ListFiles {
        /// The command text.
        command: String,
        /// The directory, when known.
        path: Option<String>,
    },
    /// Searches.
    Search {
        /// The command text.
        command: String,
        /// The pattern, when known.
        query: Option<String>,
        /// Where, when known.
        path: Option<String>,
    },
    /// Anything else.
    Unknown {
        /// The command text.
        command: String,
    },
}

impl From<crate::ParsedCommand> for CommandAction {
    fn from(parsed: crate::ParsedCommand) -> Self {
        match parsed {
            crate::ParsedCommand::Read { cmd, name, path } => Self::Read {
                command: cmd,
                path: path.map_or_else(|| name.clone(), |p| p.display().to_string()),
                name,
            },
            crate::ParsedCommand::ListFiles { cmd, path } => Self::ListFiles { command: cmd, path },
            crate::ParsedCommand::Search { cmd, query, path } => Self::Search {
                command: cmd,
                query,
                path,
            },
            crate::ParsedCommand::Unknown { cmd } => Self::Unknown { command: cmd },
        }
    }
}

/// What started a command item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionSource {
    /// A one-shot command the model ran (`shell`).
    #[default]
    Agent,
    /// A command the user ran through the client.
    UserShell,
    /// An `exec_command` session, which may keep running after its call and turn.
    UnifiedExecStartup,
    /// Input the model typed into a running session.
    UnifiedExecInteraction,
}

/// Progress of a command item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionStatus {
    /// Running (or waiting for approval).
    InProgress,
    /// Exited with status 0.
    Completed,
    /// Exited non-zero or could not run.
    Failed,
    /// The user declined it.
    Declined,
}

/// Progress of a file-change item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PatchApplyStatus {
    /// Being applied (or waiting for approval).
    InProgress,
    /// Applied.
    Completed,
    /// Failed; nothing was changed.
    Failed,
    /// The user declined it.
    Declined,
}

/// What a change does to a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// Creates the file.
    Add,
    /// Removes the file.
    Delete,
    /// Edits (and maybe moves) the file.
    Update {
        /// Where the file moves to.
        #[serde(default)]
        move_path: Option<PathBuf>,
    },
}

/// One file of a file-change item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileUpdateChange {
    /// The file.
    pub path: PathBuf,
    /// What happens to it.
    pub kind: PatchChangeKind,
    /// The content added or removed, or a unified diff for updates.
    pub diff: String,
}

impl FileUpdateChange {
    /// Converts the engine's per-file changes, sorted by path.
    pub fn from_changes(
        changes: &std::collections::BTreeMap<PathBuf, crate::FileChange>,
    ) -> Vec<Self> {
        changes
            .iter()
            .map(|(path, change)| match change {
                crate::FileChange::Add { content } => Self {
                    path: path.clone(),
                    kind: PatchChangeKind::Add,
                    diff: content.clone(),
                },
                crate::FileChange::Delete { content } => Self {
                    path: path.clone(),
                    kind: PatchChangeKind::Delete,
                    diff: content.clone(),
                },
                crate::FileChange::Update {
                    unified_diff,
                    move_path,
                } => Self {
                    path: path.clone(),
                    kind: PatchChangeKind::Update {
                        move_path: move_path.clone(),
                    },
                    diff: unified_diff.clone(),
                },
            })
            .collect()
    }
}

/// One item of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// The user's input.
    UserMessage {
        /// Item id.
        id: String,
        /// The input.
        content: Vec<UserInput>,
    },
    /// An assistant message.
    AgentMessage {
        /// Item id.
        id: String,
        /// The text so far (complete in `item/completed`).
        text: String,
        /// `final_answer` for a message shown without ending the turn; absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phase: Option<String>,
        /// `async` for a message shown without holding the turn (`send_message_to_user_async`,
        /// `request_user_input_async`); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delivery: Option<String>,
        /// The questions of `request_user_input_async`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        questions: Option<Vec<crate::AsyncUserInputQuestion>>,
    },
    /// The agent's plan, as text.
    Plan {
        /// Item id.
        id: String,
        /// The plan.
        text: String,
    },
    /// A reasoning summary.
    Reasoning {
        /// Item id.
        id: String,
        /// Summary parts.
        #[serde(default)]
        summary: Vec<String>,
        /// Raw reasoning parts (Keel reports summaries only).
        #[serde(default)]
        content: Vec<String>,
    },
    /// A command the agent ran.
    #[serde(rename_all = "camelCase")]
    CommandExecution {
        /// Item id (the tool call id).
        id: String,
        /// The command line.
        command: String,
        /// Working directory.
        cwd: PathBuf,
        /// OS process id, when known.
        #[serde(default)]
        process_id: Option<String>,
        /// Progress.
        status: CommandExecutionStatus,
        /// What started it: a one-shot `shell` call (`agent`) or an `exec_command` session
        /// (`unifiedExecStartup`), which may outlive its turn (Codex 0.169).
        #[serde(default)]
        source: CommandExecutionSource,
        /// What the command appears to do.
        command_actions: Vec<CommandAction>,
        /// Both streams as they arrived (bounded).
        #[serde(default)]
        aggregated_output: Option<String>,
        /// Exit status, once finished.
        #[serde(default)]
        exit_code: Option<i32>,
        /// Wall time in ms, once finished.
        #[serde(default)]
        duration_ms: Option<u64>,
    },
    /// A patch the agent applied.
    FileChange {
        /// Item id (the tool call id).
        id: String,
        /// Every file the patch touches.
        changes: Vec<FileUpdateChange>,
        /// Progress.
        status: PatchApplyStatus,
    },
    /// The history was summarised to fit the model's context window.
    ContextCompaction {
        /// Item id.
        id: String,
    },
    /// A review began; `review` says what it looks at.
    EnteredReviewMode {
        /// Item id.
        id: String,
        /// What is reviewed ("changes against 'main'").
        review: String,
    },
    /// A review ended; `review` is its report as people read it.
    #[serde(rename_all = "camelCase")]
    ExitedReviewMode {
        /// Item id.
        id: String,
        /// The report.
        review: String,
        /// Keel's addition: the findings and verdict as structured data (the engine's
        /// `ReviewOutput`), absent when the review was stopped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        review_output: Option<serde_json::Value>,
    },
    /// A call to a sub-agent tool (spawn, message, wait, close, resume).
    CollabAgentToolCall(Box<CollabAgentToolCallItem>),
    /// A second-generation sub-agent started, was reached, interrupted or finished a turn.
    SubAgentActivity(Box<SubAgentActivityItem>),
    /// The model's `clock.sleep` (Codex 0.171), which new input cuts short.
    #[serde(rename_all = "camelCase")]
    Sleep {
        /// Item id (the call's).
        id: String,
        /// How long the model asked to sleep.
        duration_ms: u64,
    },
    /// A call to a tool of an external MCP server.
    McpToolCall(Box<super::McpToolCallItem>),
    /// A call to a tool the client defined (`dynamicTools`) and ran.
    DynamicToolCall(Box<DynamicToolCallItem>),
}

/// Where a `dynamicToolCall` item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DynamicToolCallStatus {
    /// The client is running it.
    InProgress,
    /// The client answered with success.
    Completed,
    /// The client answered with failure, errored, or was gone.
    Failed,
}

/// The fields of a `dynamicToolCall` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallItem {
    /// Item id (the tool call id).
    pub id: String,
    /// The tool's name (within its namespace, if it has one).
    pub tool: String,
    /// The tool's namespace, if it was defined in one.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The arguments the model sent.
    pub arguments: serde_json::Value,
    /// Progress.
    pub status: DynamicToolCallStatus,
    /// The output, once answered.
    #[serde(default)]
    pub content_items: Option<Vec<crate::DynamicToolContentItem>>,
    /// Whether the call succeeded, once answered.
    #[serde(default)]
    pub success: Option<bool>,
    /// Wall time in ms, once answered.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

/// The fields of a `collabAgentToolCall` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CollabAgentToolCallItem {
    /// Item id (the tool call id).
    pub id: String,
    /// The tool.
    pub tool: crate::CollabAgentTool,
    /// Progress.
    pub status: crate::CollabAgentToolCallStatus,
    /// The thread that made the call.
    pub sender_thread_id: String,
    /// The sub-agent threads it addressed.
    pub receiver_thread_ids: Vec<String>,
    /// The message sent, when the tool sends one.
    #[serde(default)]
    pub prompt: Option<String>,
    /// The model a spawned agent runs.
    #[serde(default)]
    pub model: Option<String>,
    /// The reasoning effort a spawned agent runs with.
    #[serde(default)]
    pub reasoning_effort: Option<crate::ReasoningEffort>,
    /// Each addressed agent's state, keyed by thread id.
    pub agents_states: std::collections::BTreeMap<String, crate::CollabAgentState>,
}

/// A `subAgentActivity` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubAgentActivityItem {
    /// Item id.
    pub id: String,
    /// What happened.
    pub kind: crate::SubAgentActivityKind,
    /// The sub-agent's thread.
    pub agent_thread_id: String,
    /// Its task path.
    pub agent_path: String,
    /// The model it runs, when it was started.
    #[serde(default)]
    pub model: Option<String>,
    /// The effort it runs at, when it was started.
    #[serde(default)]
    pub reasoning_effort: Option<crate::ReasoningEffort>,
}

impl ThreadItem {
    /// The item's id.
    pub fn id(&self) -> &str {
        match self {
            Self::UserMessage { id, .. }
            | Self::AgentMessage { id, .. }
            | Self::Plan { id, .. }
            | Self::Reasoning { id, .. }
            | Self::CommandExecution { id, .. }
            | Self::FileChange { id, .. }
            | Self::EnteredReviewMode { id, .. }
            | Self::ExitedReviewMode { id, .. }
            | Self::ContextCompaction { id }
            | Self::Sleep { id, .. } => id,
            Self::CollabAgentToolCall(call) => &call.id,
            Self::SubAgentActivity(activity) => &activity.id,
            Self::McpToolCall(call) => &call.id,
            Self::DynamicToolCall(call) => &call.id,
        }
    }
}
