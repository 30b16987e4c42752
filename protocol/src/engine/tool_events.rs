//! Event payloads about tool calls: commands the agent runs and patches it applies.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FileChange, ParsedCommand};
use crate::exec_server::ExecOutputStream;
use crate::{Base64Bytes, CallId, TurnId};

/// Who asked for a command to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecCommandSource {
    /// The model, through a tool call.
    #[default]
    Agent,
    /// The user, directly.
    UserShell,
    /// The model, starting a long-lived process with `exec_command`.
    UnifiedExecStartup,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecCommandStatus {
    /// Exited with status 0.
    Completed,
    /// Exited non-zero, timed out or could not start.
    Failed,
    /// The user declined to run it.
    Declined,
}

/// Payload of `exec_command_begin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecCommandBeginEvent {
    /// The tool call that runs the command.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// What the command appears to do.
    #[serde(default)]
    pub parsed_cmd: Vec<ParsedCommand>,
    /// Who asked for it.
    #[serde(default)]
    pub source: ExecCommandSource,
    /// The `exec_command` session id the model talks to the process by, for a process
    /// that may outlive the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
}

/// Payload of `exec_command_output_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecCommandOutputDeltaEvent {
    /// The tool call that runs the command.
    pub call_id: CallId,
    /// Which stream the bytes came from.
    pub stream: ExecOutputStream,
    /// The bytes, base64 on the wire.
    pub chunk: Base64Bytes,
}

/// Payload of `exec_command_end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecCommandEndEvent {
    /// The tool call that ran the command.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// What the command appears to do.
    #[serde(default)]
    pub parsed_cmd: Vec<ParsedCommand>,
    /// Who asked for it.
    #[serde(default)]
    pub source: ExecCommandSource,
    /// The `exec_command` session id, for a process that outlived its call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
    /// Captured standard output (bounded).
    pub stdout: String,
    /// Captured standard error (bounded).
    pub stderr: String,
    /// Both streams interleaved as they arrived (bounded).
    pub aggregated_output: String,
    /// Exit status (`128 + signal` when killed by a signal, -1 when it could not start).
    pub exit_code: i32,
    /// Wall time, serialised as `{"secs": .., "nanos": ..}`.
    pub duration: Duration,
    /// The output as the model was shown it.
    pub formatted_output: String,
    /// How it ended.
    pub status: ExecCommandStatus,
}

/// Payload of `terminal_interaction`: the model wrote to a running process's terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalInteractionEvent {
    /// The `exec_command` call that started the process.
    pub call_id: CallId,
    /// The session id the model names the process by.
    pub process_id: String,
    /// What was written.
    pub stdin: String,
}

/// Payload of `exec_approval_request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecApprovalRequestEvent {
    /// Answer with `Op::ExecApproval { id: call_id, .. }`.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Why approval is needed (e.g. the sandbox blocked the first attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the command appears to do.
    #[serde(default)]
    pub parsed_cmd: Vec<ParsedCommand>,
    /// The session id an `exec_command` process will have once approved (none for `shell`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
}

/// Payload of `apply_patch_approval_request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApplyPatchApprovalRequestEvent {
    /// Answer with `Op::PatchApproval { id: call_id, .. }`.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// Every file the patch touches.
    pub changes: BTreeMap<PathBuf, FileChange>,
    /// Why approval is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A directory the patch wants write access to for the rest of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_root: Option<PathBuf>,
}

/// Payload of `patch_apply_begin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PatchApplyBeginEvent {
    /// The tool call that carries the patch.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// `true` when policy allowed the patch without asking.
    pub auto_approved: bool,
    /// Every file the patch touches.
    pub changes: BTreeMap<PathBuf, FileChange>,
}

/// Payload of `patch_apply_end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PatchApplyEndEvent {
    /// The tool call that carries the patch.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// A summary of what was applied.
    pub stdout: String,
    /// Why it failed, if it did.
    pub stderr: String,
    /// `true` when every file was changed; `false` means none was.
    pub success: bool,
    /// The changes, as in `patch_apply_begin`: kept in the rollout, so a thread read back
    /// (or `keel apply`) still knows what the patch did. Empty in older rollouts.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub changes: std::collections::BTreeMap<std::path::PathBuf, crate::FileChange>,
}
