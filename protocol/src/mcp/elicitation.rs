//! `elicitation/create`: how the server asks the user to approve a command or a patch, and the
//! two answer shapes it accepts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CallId, ConversationId, FileChange, ParsedCommand, ReviewDecision};

/// Params of `elicitation/create`: the standard `message` and `requestedSchema`, plus the
/// Codex correlation fields when the elicitation is an approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestParams {
    /// The question shown to the user.
    pub message: String,
    /// JSON Schema of the answer's `content` (an empty object schema: only the action counts).
    pub requested_schema: Value,
    /// What is being approved, for clients that understand Codex approvals.
    #[serde(flatten)]
    pub approval: ApprovalElicitation,
}

/// The approval an elicitation asks for, tagged by `codex_elicitation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "codex_elicitation", rename_all = "kebab-case")]
pub enum ApprovalElicitation {
    /// Run a command.
    ExecApproval(ExecApprovalElicitation),
    /// Apply a patch.
    PatchApproval(PatchApprovalElicitation),
}

/// Correlation fields of an exec approval elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecApprovalElicitation {
    /// The conversation asking.
    #[serde(rename = "threadId")]
    pub thread_id: ConversationId,
    /// The `tools/call` request the conversation runs under.
    pub codex_mcp_tool_call_id: String,
    /// The id of the `exec_approval_request` event.
    pub codex_event_id: String,
    /// The tool call to approve.
    pub codex_call_id: CallId,
    /// Program and arguments.
    pub codex_command: Vec<String>,
    /// Working directory.
    pub codex_cwd: PathBuf,
    /// What the command appears to do.
    pub codex_parsed_cmd: Vec<ParsedCommand>,
    /// Why approval is needed, when the engine said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_reason: Option<String>,
}

/// Correlation fields of a patch approval elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PatchApprovalElicitation {
    /// The conversation asking.
    #[serde(rename = "threadId")]
    pub thread_id: ConversationId,
    /// The `tools/call` request the conversation runs under.
    pub codex_mcp_tool_call_id: String,
    /// The id of the `apply_patch_approval_request` event.
    pub codex_event_id: String,
    /// The tool call to approve.
    pub codex_call_id: CallId,
    /// Every file the patch touches.
    pub codex_changes: BTreeMap<PathBuf, FileChange>,
    /// Why approval is needed, when the engine said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_reason: Option<String>,
    /// A directory the patch wants write access to for the rest of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_grant_root: Option<PathBuf>,
}

/// The user's answer to an elicitation, in either shape: the standard MCP
/// `{"action": ..., "content": ...}` or the Codex-style `{"decision": ...}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ElicitResult {
    /// The standard answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ElicitAction>,
    /// Form content of an accepted elicitation (unused by approvals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// The Codex-style answer; wins over `action` when both are present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<ReviewDecision>,
}

/// The standard elicitation answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user approved.
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

impl ElicitResult {
    /// The engine decision this answer means: `decision` if given, else accept → approved,
    /// decline → denied, cancel → abort. `None` when the answer has neither member.
    pub fn review_decision(&self) -> Option<ReviewDecision> {
        if let Some(decision) = self.decision {
            return Some(decision);
        }
        self.action.map(|action| match action {
            ElicitAction::Accept => ReviewDecision::Approved,
            ElicitAction::Decline => ReviewDecision::Denied,
            ElicitAction::Cancel => ReviewDecision::Abort,
        })
    }
}
