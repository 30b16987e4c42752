//! Exec and patch approvals as MCP elicitations: build the `elicitation/create` request,
//! wait for the client's answer, and hand the decision to the engine.
//!
//! Conservative by design: a client without the `elicitation` capability is never asked (the
//! request is denied and the model told why), and an error or unreadable answer denies.

use std::sync::Arc;

use keel_core::Conversation;
use keel_protocol::mcp::{
    ApprovalElicitation, ElicitRequestParams, ElicitResult, ExecApprovalElicitation,
    PatchApprovalElicitation,
};
use keel_protocol::{
    ApplyPatchApprovalRequestEvent, CallId, ConversationId, ExecApprovalRequestEvent, InputItem,
    Op, RequestId, ReviewDecision, SubmissionId,
};
use serde_json::json;

use crate::methods::mcp_server_request;
use crate::outgoing::OutgoingSender;

/// Everything an approval needs to reach the client and correlate the answer.
#[derive(Clone)]
pub(crate) struct ApprovalRoute {
    /// Sends the elicitation.
    pub(crate) outgoing: OutgoingSender,
    /// Whether the client declared the `elicitation` capability.
    pub(crate) elicitation: bool,
    /// The `tools/call` the conversation is delivered under.
    pub(crate) tool_call_id: RequestId,
    /// The conversation asking.
    pub(crate) thread_id: ConversationId,
}

/// Asks the client to approve a command and answers the engine.
pub(crate) async fn resolve_exec(
    route: ApprovalRoute,
    conversation: Arc<Conversation>,
    event_id: SubmissionId,
    request: ExecApprovalRequestEvent,
) {
    let command = shlex::try_join(request.command.iter().map(String::as_str))
        .unwrap_or_else(|_| request.command.join(" "));
    let call_id = request.call_id.clone();
    let decision = if route.elicitation {
        let mut message = format!(
            "Allow Keel to run `{command}` in `{}`?",
            request.cwd.display()
        );
        if let Some(reason) = &request.reason {
            message.push_str(&format!(" Reason: {reason}"));
        }
        let approval = ApprovalElicitation::ExecApproval(ExecApprovalElicitation {
            thread_id: route.thread_id,
            codex_mcp_tool_call_id: route.tool_call_id.to_string(),
            codex_event_id: event_id.to_string(),
            codex_call_id: request.call_id,
            codex_command: request.command,
            codex_cwd: request.cwd,
            codex_parsed_cmd: request.parsed_cmd,
            codex_reason: request.reason,
        });
        ask(&route, message, approval, &call_id).await
    } else {
        tell_model_no_elicitation(&conversation, &format!("run `{command}`")).await;
        ReviewDecision::Denied
    };
    submit(
        &conversation,
        Op::ExecApproval {
            id: call_id,
            decision,
        },
    )
    .await;
}

/// Asks the client to approve a patch and answers the engine.
pub(crate) async fn resolve_patch(
    route: ApprovalRoute,
    conversation: Arc<Conversation>,
    event_id: SubmissionId,
    request: ApplyPatchApprovalRequestEvent,
) {
    let call_id = request.call_id.clone();
    let files = request
        .changes
        .keys()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let decision = if route.elicitation {
        let mut message = format!("Allow Keel to apply a patch to {files}?");
        if let Some(reason) = &request.reason {
            message.push_str(&format!(" Reason: {reason}"));
        }
        let approval = ApprovalElicitation::PatchApproval(PatchApprovalElicitation {
            thread_id: route.thread_id,
            codex_mcp_tool_call_id: route.tool_call_id.to_string(),
            codex_event_id: event_id.to_string(),
            codex_call_id: request.call_id,
            codex_changes: request.changes,
            codex_reason: request.reason,
            codex_grant_root: request.grant_root,
        });
        ask(&route, message, approval, &call_id).await
    } else {
        tell_model_no_elicitation(&conversation, &format!("apply a patch to {files}")).await;
        ReviewDecision::Denied
    };
    submit(
        &conversation,
        Op::PatchApproval {
            id: call_id,
            decision,
        },
    )
    .await;
}

/// Sends the elicitation and maps the answer; anything but a readable answer denies.
async fn ask(
    route: &ApprovalRoute,
    message: String,
    approval: ApprovalElicitation,
    call_id: &CallId,
) -> ReviewDecision {
    let params = ElicitRequestParams {
        message,
        requested_schema: json!({"type": "object", "properties": {}}),
        approval,
    };
    let reply = route
        .outgoing
        .send_request::<mcp_server_request::Elicit>(&params)
        .await;
    match reply.await {
        Ok(Ok(result)) => match serde_json::from_value::<ElicitResult>(result.clone()) {
            Ok(answer) => answer.review_decision().unwrap_or_else(|| {
                tracing::warn!(%call_id, %result, "approval answer has neither `action` nor `decision`; denying");
                ReviewDecision::Denied
            }),
            Err(err) => {
                tracing::warn!(%call_id, %result, %err, "unreadable approval answer; denying");
                ReviewDecision::Denied
            }
        },
        Ok(Err(error)) => {
            tracing::warn!(%call_id, %error, "the client answered the approval with an error; denying");
            ReviewDecision::Denied
        }
        Err(_) => {
            tracing::warn!(%call_id, "no answer to the approval elicitation; denying");
            ReviewDecision::Denied
        }
    }
}

/// Tells the model why its action was denied without asking anyone: the note joins the
/// running turn and reaches the model with the denial.
async fn tell_model_no_elicitation(conversation: &Conversation, action: &str) {
    tracing::warn!(
        conversation = %conversation.id(),
        "the client cannot answer approvals (no `elicitation` capability); denying: {action}"
    );
    let note = format!(
        "Keel's MCP server denied the request to {action} without asking anyone: its client \
         cannot answer approval requests (it did not declare the MCP `elicitation` \
         capability). Do not retry; finish without it or explain what approval is needed."
    );
    submit(
        conversation,
        Op::UserInput {
            items: vec![InputItem::text(note)],
        },
    )
    .await;
}

async fn submit(conversation: &Conversation, op: Op) {
    if let Err(err) = conversation.submit(op).await {
        tracing::debug!(conversation = %conversation.id(), %err, "cannot deliver an approval answer");
    }
}

/// MCP has no way to put the model's questions to the user: the model is told nobody
/// answered, so it decides itself (the questions went out with the `codex/event`).
/// Declines a question an external MCP server asked during a tool call: keel mcp-server does
/// not relay such questions to its own client, so the server is told no rather than left
/// waiting until the call times out.
pub(crate) async fn decline_elicitation(
    conversation: &Conversation,
    request: &keel_protocol::ElicitationRequestEvent,
) {
    submit(
        conversation,
        Op::ResolveElicitation {
            server_name: request.server_name.clone(),
            request_id: request.id.clone(),
            decision: keel_protocol::ElicitationAction::Decline,
            content: None,
        },
    )
    .await;
}

pub(crate) async fn answer_user_input_unasked(conversation: &Conversation, call_id: CallId) {
    submit(
        conversation,
        Op::UserInputAnswer {
            id: call_id,
            response: keel_protocol::UserInputResponse::default(),
        },
    )
    .await;
}
