//! The submission side of the engine queue: what a client asks a conversation to do.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AskForApproval, InputItem, ReasoningEffort, ReviewDecision, SandboxPolicy};
use crate::{CallId, SubmissionId};

/// One request to a conversation; every event it causes carries the same `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Submission {
    /// Chosen by the submitter; echoed in [`super::Event::id`].
    pub id: SubmissionId,
    /// What to do.
    pub op: Op,
}

/// An operation on a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Op {
    /// User input. Starts a turn, or joins the running turn if there is one.
    UserInput {
        /// The input.
        items: Vec<InputItem>,
    },
    /// User input with settings that apply from this turn on.
    UserTurn {
        /// The input.
        items: Vec<InputItem>,
        /// Working directory for commands and patches.
        cwd: PathBuf,
        /// When to ask before acting.
        approval_policy: AskForApproval,
        /// Restrictions on commands.
        sandbox_policy: SandboxPolicy,
        /// The model to sample.
        model: String,
        /// Reasoning effort, for models that reason.
        #[serde(default)]
        effort: Option<ReasoningEffort>,
    },
    /// Changes settings for later turns without starting one.
    OverrideTurnContext {
        /// New working directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
        /// New approval policy.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval_policy: Option<AskForApproval>,
        /// New sandbox policy.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox_policy: Option<SandboxPolicy>,
        /// New model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// New reasoning effort.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effort: Option<ReasoningEffort>,
    },
    /// Stops the running turn: the model stream ends and running commands are killed.
    Interrupt,
    /// Answers a `request_user_input` (empty answers: the user could not or would not).
    UserInputAnswer {
        /// The `call_id` of the request being answered.
        id: CallId,
        /// The answers.
        response: crate::UserInputResponse,
    },
    /// Answers a `dynamic_tool_call_request` with what the client's tool produced.
    DynamicToolResponse {
        /// The `call_id` of the request being answered.
        id: CallId,
        /// The tool's output.
        response: crate::DynamicToolResponse,
    },
    /// The next turn's final answer must match this JSON Schema: it is sent to the model as
    /// the response format (Codex clients ask this of short structured turns, such as a
    /// thread title). Applies to the next turn started by user input, then is forgotten.
    NextTurnOutputSchema {
        /// A JSON Schema object.
        schema: serde_json::Value,
    },
    /// The next turn's span is a child of this remote span (a W3C `traceparent`), so a
    /// client's trace continues into the engine's. Applies to the next turn, then is
    /// forgotten; ignored without telemetry.
    NextTurnTraceContext {
        /// `00-<trace id>-<span id>-<flags>`.
        traceparent: String,
    },
    /// Answers an `elicitation_request` from an MCP server.
    ResolveElicitation {
        /// The server that asked.
        server_name: String,
        /// The `id` of the request being answered.
        request_id: serde_json::Value,
        /// The user's choice.
        decision: crate::ElicitationAction,
        /// The answer, shaped by the request's schema, when accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Value>,
    },
    /// Answers an `exec_approval_request`.
    ExecApproval {
        /// The `call_id` of the request being answered.
        id: CallId,
        /// The answer.
        decision: ReviewDecision,
    },
    /// Answers an `apply_patch_approval_request`.
    PatchApproval {
        /// The `call_id` of the request being answered.
        id: CallId,
        /// The answer.
        decision: ReviewDecision,
    },
    /// Kills the `exec_command` sessions left running (all, or the one with this session
    /// id); each one's `exec_command_end` follows.
    CloseBackgroundTerminals {
        /// The session to kill; every one when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        process_id: Option<String>,
    },
    /// Drops the latest `num_turns` turns from the history the model sees; `thread_rolled_back`
    /// follows. Rejected while a turn runs.
    ThreadRollback {
        /// How many turns to drop, counting back from the latest.
        num_turns: u32,
    },
    /// Replaces the history with a summary of it, as a turn of its own (`task_started`,
    /// `context_compaction_started`, `context_compacted`, `task_complete`).
    Compact {
        /// Instructions for writing the summary, instead of Keel's own.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
    },
    /// Reviews a change as a turn of its own (`task_started`, `entered_review_mode`, the
    /// reviewer's commands, `exited_review_mode` with the findings, `task_complete`). The
    /// reviewer starts from a fresh history; the conversation keeps only its verdict.
    /// Refused while another turn runs.
    Review {
        /// What to review.
        review_request: super::ReviewRequest,
    },
    /// The goal was changed through `Conversation::set_goal` or `clear_goal`: records the
    /// change (`thread_goal_updated` or `thread_goal_cleared`), notes a person's change for the
    /// model, and starts working when the goal is active and no turn runs.
    GoalChanged {
        /// Who changed it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<super::ThreadGoalMutationOrigin>,
    },
    /// Starts a turn toward the active goal when no turn runs (after a resume, say).
    ContinueGoal,
    /// Switches the collaboration mode from the next turn on. In `plan` mode the model
    /// explores and plans: commands run read-only whatever the sandbox, and `apply_patch` is
    /// not offered; the mode's instructions (the client's, or Keel's) lead each request.
    SetCollaborationMode {
        /// The mode.
        mode: super::CollaborationModeKind,
        /// Instructions that come with it (a client's own wording of the mode).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        developer_instructions: Option<String>,
    },
    /// Adds items to the history the model sees (Responses API items: messages, function
    /// calls and their outputs), as they are; with the next request of the running turn, or
    /// before the next turn. Nothing is shown to clients.
    InjectItems {
        /// The items, as the Responses API shapes them.
        items: Vec<serde_json::Value>,
    },
    /// Runs the user's own command (a client's `!cmd`) with their login shell in the
    /// conversation's working directory, under its sandbox: a turn of its own
    /// (`exec_command_begin`/`_end` with source `user_shell`), or part of the running turn,
    /// whose model then sees it. The history notes the command and its output.
    RunUserShellCommand {
        /// The command line, for the shell's `-lc`.
        command: String,
        /// How long it may run (default one hour).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Ends the conversation; `shutdown_complete` follows.
    Shutdown,
}
