//! Reading the events of a spawned conversation no client shows.

use std::sync::Arc;

use keel_protocol::{EventMsg, Op, ReviewDecision};

use crate::conversation::Conversation;

/// Reads a spawned conversation's events until it shuts down, so it never waits on a full
/// event queue; nobody can answer its approval requests, so they are declined (the model is
/// told and goes on).
pub(crate) async fn drain_unobserved(conversation: Arc<Conversation>) {
    while let Ok(event) = conversation.next_event().await {
        let answer = match event.msg {
            EventMsg::ExecApprovalRequest(request) => Op::ExecApproval {
                id: request.call_id,
                decision: ReviewDecision::Denied,
            },
            EventMsg::ApplyPatchApprovalRequest(request) => Op::PatchApproval {
                id: request.call_id,
                decision: ReviewDecision::Denied,
            },
            EventMsg::RequestUserInput(request) => Op::UserInputAnswer {
                id: request.call_id,
                response: keel_protocol::UserInputResponse::default(),
            },
            EventMsg::ShutdownComplete => break,
            _ => continue,
        };
        tracing::warn!(
            conversation = %conversation.id(),
            "a sub-agent asked for approval and no client shows it; declined"
        );
        if conversation.submit(answer).await.is_err() {
            break;
        }
    }
}
