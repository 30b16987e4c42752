//! The engine's approval requests as `session/request_permission`: the person answers in the
//! editor (allow once, allow for the session, reject), and the answer goes back to the
//! engine. A cancelled turn answers its waiting approvals itself (`cancel`), so the engine
//! never waits for an editor that moved on.

use std::sync::Arc;

use keel_protocol::RequestId;
use keel_protocol::acp::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use keel_protocol::app_server::{CommandExecutionApprovalDecision, ServerRequest};
use serde_json::{Value, json};

use crate::sessions::Sessions;
use crate::updates::patch_call_parts;
use crate::wire::Wire;

/// What answering the engine's requests needs: the sessions, the editor, the engine.
pub(crate) struct Asker {
    /// The sessions.
    pub sessions: Arc<Sessions>,
    /// The editor.
    pub wire: Wire,
    /// The engine.
    pub client: Arc<keel_app_server::InProcessAppServerClient>,
    /// Whether the editor shows sub-agents as sessions (else theirs are asked on its own).
    pub subagents: bool,
}

impl Asker {
    /// Answers one of the engine's requests.
    pub(crate) async fn respond_to_engine(&self, id: RequestId, result: Value) {
        if let Err(err) = self.client.respond(id, result).await {
            tracing::warn!("the engine did not take an answer: {err}");
        }
    }
}

/// The options offered for every approval.
fn options() -> Vec<PermissionOption> {
    [
        ("allow-once", "Allow", PermissionOptionKind::AllowOnce),
        (
            "allow-always",
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ),
        ("reject-once", "Reject", PermissionOptionKind::RejectOnce),
    ]
    .into_iter()
    .map(|(id, name, kind)| PermissionOption {
        option_id: id.to_string(),
        name: name.to_string(),
        kind,
    })
    .collect()
}

/// What the engine is told for the editor's answer.
fn decision(outcome: &RequestPermissionOutcome) -> CommandExecutionApprovalDecision {
    match outcome {
        RequestPermissionOutcome::Selected { option_id } => match option_id.as_str() {
            "allow-once" => CommandExecutionApprovalDecision::Accept,
            "allow-always" => CommandExecutionApprovalDecision::AcceptForSession,
            _ => CommandExecutionApprovalDecision::Decline,
        },
        RequestPermissionOutcome::Cancelled => CommandExecutionApprovalDecision::Cancel,
    }
}

/// Answers one request of the engine: approvals are asked of the editor, the rest declined.
pub(crate) async fn answer(agent: Asker, id: RequestId, request: ServerRequest) {
    let (session_id, tool_call) = match request {
        ServerRequest::CommandExecutionRequestApproval(params) => {
            let command = params.command.clone().unwrap_or_default();
            (
                params.thread_id,
                ToolCallUpdate {
                    tool_call_id: params.item_id,
                    title: Some(command.clone()),
                    kind: Some(ToolKind::Execute),
                    status: Some(ToolCallStatus::Pending),
                    raw_input: Some(json!({
                        "command": command, "cwd": params.cwd, "reason": params.reason,
                    })),
                    ..ToolCallUpdate::default()
                },
            )
        }
        ServerRequest::FileChangeRequestApproval(params) => {
            let changes = agent
                .sessions
                .with(&params.thread_id, |session| {
                    session.changes.get(&params.item_id).cloned()
                })
                .flatten()
                .unwrap_or_default();
            let (title, content, locations) = patch_call_parts(&changes);
            (
                params.thread_id,
                ToolCallUpdate {
                    tool_call_id: params.item_id,
                    title: Some(title),
                    kind: Some(ToolKind::Edit),
                    status: Some(ToolCallStatus::Pending),
                    content: Some(content),
                    locations: Some(locations),
                    raw_input: params.reason.map(|reason| json!({"reason": reason})),
                    ..ToolCallUpdate::default()
                },
            )
        }
        ServerRequest::McpServerElicitation(_) => {
            agent
                .respond_to_engine(id, json!({"action": "decline"}))
                .await;
            return;
        }
        ServerRequest::ToolRequestUserInput(_) => {
            agent.respond_to_engine(id, json!({"answers": {}})).await;
            return;
        }
        ServerRequest::DynamicToolCall(_) => {
            agent
                .respond_to_engine(
                    id,
                    json!({"contentItems": [{"type": "inputText",
                        "text": "this tool is not available in an editor session"}],
                        "success": false}),
                )
                .await;
            return;
        }
    };
    let registered = agent
        .sessions
        .with(&session_id, |session| session.approvals.insert(id.clone()))
        .is_some();
    if !registered {
        agent
            .respond_to_engine(
                id,
                decision_value(CommandExecutionApprovalDecision::Decline),
            )
            .await;
        return;
    }
    let ask_on = if agent.subagents {
        session_id.clone()
    } else {
        agent
            .sessions
            .top_of(&session_id)
            .unwrap_or_else(|| session_id.clone())
    };
    let params = RequestPermissionRequest {
        session_id: ask_on,
        tool_call,
        options: options(),
    };
    let answer = match agent.wire.request_permission(params).await {
        Ok(answer) => answer.await,
        Err(err) => {
            tracing::warn!("cannot encode a permission request: {err}");
            return;
        }
    };
    let outcome = match answer {
        Ok(Ok(result)) => serde_json::from_value::<RequestPermissionResponse>(result)
            .map(|response| response.outcome)
            .unwrap_or_else(|err| {
                tracing::warn!("unreadable permission answer: {err}");
                RequestPermissionOutcome::Cancelled
            }),
        Ok(Err(error)) => {
            tracing::warn!("the editor refused a permission request: {error}");
            RequestPermissionOutcome::Cancelled
        }
        Err(_) => RequestPermissionOutcome::Cancelled,
    };
    // A cancel may have answered it already.
    let still_waiting = agent
        .sessions
        .with(&session_id, |session| session.approvals.remove(&id))
        .unwrap_or(false);
    if still_waiting {
        agent
            .respond_to_engine(id, decision_value(decision(&outcome)))
            .await;
    }
}

/// The engine's answer for a decision.
fn decision_value(decision: CommandExecutionApprovalDecision) -> Value {
    json!({ "decision": decision })
}
