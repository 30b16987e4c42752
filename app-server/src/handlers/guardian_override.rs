//! `thread/approveGuardianDeniedAction`: a person overrides an automatic reviewer's denial.
//! Keel has no automatic reviewer, but a client that has one (or replays Codex's events) can
//! still record the person's approval: the model is told, in its history, which action the
//! person approved, so it may try it again.

use keel_protocol::Op;
use keel_protocol::app_server::{EmptyResponse, ThreadApproveGuardianDeniedActionParams};
use serde_json::{Value, json};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

/// The denial's required members, checked in Codex's order.
fn check_event(event: &Value) -> Result<&Value> {
    let invalid = |what: &str| {
        AppServerError::InvalidRequest(format!("invalid Guardian denial event: {what}"))
    };
    let Some(object) = event.as_object() else {
        return Err(invalid("expected an object"));
    };
    for member in ["id", "status", "action"] {
        if !object.contains_key(member) {
            return Err(invalid(&format!("missing field `{member}`")));
        }
    }
    if !object["id"].is_string() || !object["status"].is_string() {
        return Err(invalid("`id` and `status` must be strings"));
    }
    let action = &object["action"];
    if !action.get("type").is_some_and(Value::is_string) {
        return Err(invalid("missing field `type` in `action`"));
    }
    Ok(action)
}

async fn approve(
    state: &AppState,
    params: ThreadApproveGuardianDeniedActionParams,
) -> Result<Reply> {
    let action = check_event(&params.event)?.clone();
    let id = parse_thread_id(&params.thread_id)?;
    let thread = state
        .loaded(id)
        .await
        .ok_or_else(|| AppServerError::InvalidRequest(format!("thread not found: {id}")))?;
    let approved = json!({"action": action, "outcome": "allowed"});
    let note = format!(
        "The user has manually approved an action that an automatic review had denied. \
         You may take this action now if it is still needed.\nApproved action: {approved}"
    );
    thread
        .conversation
        .submit(Op::InjectItems {
            items: vec![json!({
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": note}],
            })],
        })
        .await?;
    Reply::now(&EmptyResponse {})
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadApproveGuardianDeniedAction, |ctx, p| approve(
    ctx.state, p
)
.await);
