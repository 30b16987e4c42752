//! Server → client approval requests.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CommandAction;
use crate::ReviewDecision;

/// Params of `item/commandExecution/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The command item awaiting approval.
    pub item_id: String,
    /// Distinguishes several approvals of one item (unused by Keel: always `null`).
    pub approval_id: Option<String>,
    /// The command line.
    pub command: Option<String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Why approval is needed.
    pub reason: Option<String>,
    /// What the command appears to do.
    pub command_actions: Option<Vec<CommandAction>>,
    /// When the request was made, in milliseconds since the Unix epoch (Codex 0.169 clients
    /// need it).
    #[serde(default)]
    pub started_at_ms: i64,
    /// The decisions the client may offer (Codex 0.169 clients offer only yes and no
    /// without it).
    #[serde(default)]
    pub available_decisions: Option<Vec<CommandExecutionApprovalDecision>>,
}

impl CommandExecutionApprovalDecision {
    /// Every decision Keel acts on, in the order a client offers them.
    pub const ALL: [Self; 4] = [
        Self::Accept,
        Self::AcceptForSession,
        Self::Decline,
        Self::Cancel,
    ];
}

/// The client's answer to a command approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionApprovalDecision {
    /// Run it.
    Accept,
    /// Run it and do not ask again for it in this thread.
    AcceptForSession,
    /// Do not run it; the turn continues.
    Decline,
    /// Do not run it and interrupt the turn.
    Cancel,
}

impl From<CommandExecutionApprovalDecision> for ReviewDecision {
    fn from(decision: CommandExecutionApprovalDecision) -> Self {
        match decision {
            CommandExecutionApprovalDecision::Accept => Self::Approved,
            CommandExecutionApprovalDecision::AcceptForSession => Self::ApprovedForSession,
            CommandExecutionApprovalDecision::Decline => Self::Denied,
            CommandExecutionApprovalDecision::Cancel => Self::Abort,
        }
    }
}

/// Result of `item/commandExecution/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandExecutionRequestApprovalResponse {
    /// The answer.
    pub decision: CommandExecutionApprovalDecision,
}

/// Params of `item/fileChange/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The file-change item awaiting approval.
    pub item_id: String,
    /// Why approval is needed.
    pub reason: Option<String>,
    /// A directory the patch wants write access to.
    pub grant_root: Option<PathBuf>,
    /// When the request was made, in milliseconds since the Unix epoch (Codex 0.169 clients
    /// need it).
    #[serde(default)]
    pub started_at_ms: i64,
}

/// Result of `item/fileChange/requestApproval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChangeRequestApprovalResponse {
    /// The answer (same values as for commands).
    pub decision: CommandExecutionApprovalDecision,
}

/// Params of `item/tool/requestUserInput`: the model's questions for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The tool call asking.
    pub item_id: String,
    /// The questions.
    pub questions: Vec<crate::UserInputQuestion>,
    /// The turn waits for the answers (always, in Keel; Codex 0.169 clients need the field).
    #[serde(default)]
    pub is_blocking: bool,
}

/// Result of `item/tool/requestUserInput`: answers keyed by question id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolRequestUserInputResponse {
    /// Answers by question id.
    pub answers: std::collections::BTreeMap<String, crate::UserInputAnswer>,
}

/// Params of `item/tool/call`: run a tool this client defined, for the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The model's call id (also the item id).
    pub call_id: String,
    /// The tool's name (within its namespace, if it has one).
    pub tool: String,
    /// The tool's namespace, if it was defined in one.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The arguments the model sent.
    pub arguments: serde_json::Value,
}

/// Result of `item/tool/call`.
pub type DynamicToolCallResponse = crate::DynamicToolResponse;
