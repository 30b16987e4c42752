//! What a tool call may use: where it runs, under which policies, how to tell the client and
//! ask the user, and when to give up. Built-in and embedder tools get the same context.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use keel_protocol::{
    AskForApproval, CallId, ConversationId, EventMsg, ExecApprovalRequestEvent, ReviewDecision,
    SandboxPolicy, TurnId,
};
use tokio_util::sync::CancellationToken;

use super::host::ToolHost;
use super::tool_error::ToolError;
use super::turn_diff::TurnDiffTracker;
use crate::turn_context::{TurnContext, TurnIds, TurnStop};

/// Marks a remembered tool approval, so it never matches a shell command's argv.
const TOOL_APPROVAL_KEY: &str = "\0keel-tool-approval";

/// One tool call's view of the conversation it runs in. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    pub(crate) host: Arc<dyn ToolHost>,
    pub(crate) turn: Arc<TurnContext>,
    pub(crate) ids: Arc<TurnIds>,
    pub(crate) cancel: CancellationToken,
    pub(crate) call_id: CallId,
    pub(crate) diff: Arc<Mutex<TurnDiffTracker>>,
    /// The call's span and telemetry events (empty without telemetry).
    pub(crate) trace: crate::telemetry::ToolTrace,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("conversation_id", &self.host.id())
            .field("turn_id", &self.ids.turn_id)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// The id the model gave this call; events about it should carry it.
    pub fn call_id(&self) -> &CallId {
        &self.call_id
    }

    /// The turn the call belongs to.
    pub fn turn_id(&self) -> &TurnId {
        &self.ids.turn_id
    }

    /// The conversation the call belongs to.
    pub fn conversation_id(&self) -> ConversationId {
        self.host.id()
    }

    /// The directory relative paths in the call are taken from.
    pub fn cwd(&self) -> &Path {
        &self.turn.cwd
    }

    /// When the user wants to be asked.
    pub fn approval_policy(&self) -> AskForApproval {
        self.turn.approval_policy
    }

    /// What the user allowed commands and writes to touch; a tool that writes files or runs
    /// programs keeps within it.
    pub fn sandbox_policy(&self) -> &SandboxPolicy {
        &self.turn.sandbox_policy
    }

    /// Cancelled when the turn is interrupted: a long-running tool stops and returns
    /// [`ToolError::Interrupted`].
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Sends an event to the conversation's client (recorded in the rollout when it is part
    /// of the transcript). Waits while the client is slow to read.
    pub async fn send_event(&self, msg: EventMsg) {
        self.host.send_event(&self.ids.sub_id, msg).await;
    }

    /// Asks the user whether to go ahead, as a command approval naming `command` (what the
    /// client shows) and `reason`, and waits for the decision. `Abort`, or an interrupt while
    /// waiting, is [`ToolError::Interrupted`]; an approval for the session is remembered for
    /// this exact `command`, which is then approved without asking.
    pub async fn request_approval(
        &self,
        command: Vec<String>,
        reason: Option<String>,
    ) -> Result<ReviewDecision, ToolError> {
        // Remembered apart from shell commands: approving a tool's `["git", "push"]` for the
        // session must not let the model's own `git push` run unsandboxed unasked.
        let remembered: Vec<String> = std::iter::once(TOOL_APPROVAL_KEY.to_string())
            .chain(command.iter().cloned())
            .collect();
        if self.host.is_approved_for_session(&remembered) {
            return Ok(ReviewDecision::ApprovedForSession);
        }
        let event = EventMsg::ExecApprovalRequest(ExecApprovalRequestEvent {
            call_id: self.call_id.clone(),
            turn_id: self.ids.turn_id.clone(),
            command: command.clone(),
            cwd: self.turn.cwd.clone(),
            reason,
            parsed_cmd: Vec::new(),
            process_id: None,
        });
        let decision = self
            .wait_for_decision(&self.call_id, event)
            .await
            .map_err(|_| ToolError::Interrupted)?;
        match decision {
            ReviewDecision::Abort => Err(ToolError::Interrupted),
            ReviewDecision::ApprovedForSession => {
                self.host.approve_for_session(remembered);
                Ok(decision)
            }
            ReviewDecision::Approved | ReviewDecision::Denied => Ok(decision),
        }
    }

    /// Sends an approval request event and waits for the answer (or an interrupt). A
    /// client that goes away without answering declines.
    pub(crate) async fn wait_for_decision(
        &self,
        call_id: &CallId,
        event: EventMsg,
    ) -> Result<ReviewDecision, TurnStop> {
        if let Some(decision) = self.permission_hooks(call_id, &event).await {
            self.trace
                .decision(decision, crate::telemetry::DecisionSource::Config);
            return Ok(decision);
        }
        let rx = self.host.register_approval(call_id.clone());
        self.host.send_event(&self.ids.sub_id, event).await;
        tokio::select! {
            () = self.cancel.cancelled() => {
                self.host.forget_approval(call_id);
                Err(TurnStop::Interrupted)
            }
            decision = rx => {
                let decision = decision.unwrap_or(ReviewDecision::Denied);
                self.trace.decision(decision, crate::telemetry::DecisionSource::User);
                Ok(decision)
            }
        }
    }

    /// `PermissionRequest` hooks: a hook may approve or refuse in the user's place; `None`
    /// leaves the question to the user.
    async fn permission_hooks(&self, call_id: &CallId, event: &EventMsg) -> Option<ReviewDecision> {
        use crate::hooks::{HookEvent, PermissionAnswer};
        let hooks = &self.turn.hooks;
        if hooks.is_empty() {
            return None;
        }
        let (tool_name, tool_input) = match event {
            EventMsg::ExecApprovalRequest(request) => {
                let (_, input) = crate::hooks::tool_view(
                    "shell",
                    &serde_json::json!({ "command": request.command }).to_string(),
                );
                let command = input.get("command").cloned().unwrap_or_default();
                (
                    "Bash".to_string(),
                    serde_json::json!({"command": command, "description": request.reason}),
                )
            }
            EventMsg::ApplyPatchApprovalRequest(request) => (
                "apply_patch".to_string(),
                serde_json::json!({
                    "description": request.reason,
                    "files": request.changes.keys().collect::<Vec<_>>(),
                }),
            ),
            _ => return None,
        };
        let turn_id = self.ids.turn_id.as_str();
        for msg in crate::hooks::started_events(
            hooks,
            HookEvent::PermissionRequest,
            Some(&tool_name),
            self.turn.bypass_hook_trust,
            Some(call_id.as_str()),
            turn_id,
        ) {
            self.host.send_event(&self.ids.sub_id, msg).await;
        }
        let session = self
            .turn
            .hook_session(self.host.id().to_string(), self.host.rollout_path());
        let outcome = crate::hooks::run_event(
            hooks,
            &session,
            HookEvent::PermissionRequest,
            Some(&tool_name),
            Some(turn_id),
            serde_json::json!({"tool_name": tool_name, "tool_input": tool_input}),
        )
        .await;
        for msg in crate::hooks::finished_events(&outcome, Some(call_id.as_str()), turn_id) {
            self.host.send_event(&self.ids.sub_id, msg).await;
        }
        match outcome.permission? {
            PermissionAnswer::Allow => Some(ReviewDecision::Approved),
            PermissionAnswer::Deny(message) => {
                tracing::info!(call = %call_id.as_str(), "a PermissionRequest hook refused: {message}");
                Some(ReviewDecision::Denied)
            }
        }
    }

    /// The turn's record of changed files, for `turn_diff` events.
    pub(crate) fn diff(&self) -> MutexGuard<'_, TurnDiffTracker> {
        self.diff
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
