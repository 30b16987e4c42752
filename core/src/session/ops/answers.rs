//! The operations that answer what a turn is waiting on: approvals, the user's answers, a
//! client tool's output, an MCP server's question.

use keel_protocol::{CallId, DynamicToolResponse, ReviewDecision, UserInputResponse};

use super::super::Session;

/// `Op::ExecApproval` / `Op::PatchApproval`: the client's decision on a command or a patch.
pub(crate) fn approval(session: &Session, call_id: &CallId, decision: ReviewDecision) {
    session.approvals.resolve(call_id, decision);
}

/// `Op::UserInputAnswer`: the user's answers to `request_user_input`.
pub(crate) fn user_input(session: &Session, call_id: &CallId, response: UserInputResponse) {
    session.user_inputs.resolve(call_id, response);
}

/// `Op::DynamicToolResponse`: the client's output for a call of its own tool.
pub(crate) fn dynamic_tool(session: &Session, call_id: &CallId, response: DynamicToolResponse) {
    session.dynamic_calls.resolve(call_id, response);
}

/// `Op::ResolveElicitation`: the user's answer to an MCP server's question (the content only
/// with an accept).
#[cfg(feature = "mcp")]
pub(crate) fn elicitation(
    session: &Session,
    server_name: &str,
    request_id: &serde_json::Value,
    decision: keel_protocol::ElicitationAction,
    content: Option<serde_json::Value>,
) {
    let action = match decision {
        keel_protocol::ElicitationAction::Accept => rmcp::model::ElicitationAction::Accept,
        keel_protocol::ElicitationAction::Decline => rmcp::model::ElicitationAction::Decline,
        keel_protocol::ElicitationAction::Cancel => rmcp::model::ElicitationAction::Cancel,
    };
    let mut result = rmcp::model::ElicitResult::new(action);
    result.content = content.filter(|_| decision == keel_protocol::ElicitationAction::Accept);
    session.elicitations.resolve(
        &super::super::elicitation_key(server_name, request_id),
        result,
    );
}

/// `Op::ResolveElicitation` in a build without an MCP client: nothing asked, nothing to answer.
#[cfg(not(feature = "mcp"))]
pub(crate) fn elicitation(
    _session: &Session,
    server_name: &str,
    _request_id: &serde_json::Value,
    _decision: keel_protocol::ElicitationAction,
    _content: Option<serde_json::Value>,
) {
    tracing::warn!(
        server_name,
        "an elicitation answer, but this build has no MCP client"
    );
}
