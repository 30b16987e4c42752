//! Sub-agents and job workers on the MCP server: their events go out as `codex/event` like
//! their parent's (with their own `threadId`, under the `tools/call` of the agent that
//! spawned them), and their approval requests reach the client the same way.

use std::sync::{Arc, Weak};

use keel_core::SpawnedConversation;
use keel_protocol::mcp::CodexEventMeta;
use keel_protocol::{EventMsg, RequestId};
use tokio::task::JoinSet;

use crate::approval::{self, ApprovalRoute};
use crate::context::ServerContext;

/// Starts forwarding every conversation the engine's agents spawn.
pub(crate) fn forward_spawned(context: &Arc<ServerContext>) {
    let mut spawned = context.manager.subscribe_spawned();
    let context = Arc::downgrade(context);
    tokio::spawn(async move {
        while let Some(child) = spawned.recv().await {
            tokio::spawn(forward(context.clone(), child));
        }
    });
}

/// Forwards one spawned conversation's events until it shuts down.
async fn forward(context: Weak<ServerContext>, child: SpawnedConversation) {
    let conversation = child.new.conversation;
    let thread_id = conversation.id();
    let request_id = match context.upgrade() {
        Some(context) => {
            let id = context
                .call_running_thread(child.parent_id)
                .or_else(|| context.sub_agents.lock().get(&child.parent_id).cloned());
            if let Some(id) = &id {
                context.sub_agents.lock().insert(thread_id, id.clone());
            }
            id
        }
        None => return,
    };
    let meta = CodexEventMeta {
        request_id: request_id.clone(),
        thread_id: Some(thread_id),
        conversation_id: None,
    };
    let mut approvals = JoinSet::new();
    while let Ok(event) = conversation.next_event().await {
        let Some(context) = context.upgrade() else {
            break;
        };
        while approvals.try_join_next().is_some() {}
        context.send_event(&meta, event.clone()).await;
        let route = |tool_call_id: RequestId| ApprovalRoute {
            outgoing: context.outgoing.clone(),
            elicitation: context.client_supports_elicitation(),
            tool_call_id,
            thread_id,
        };
        match (event.msg, &request_id) {
            (EventMsg::ExecApprovalRequest(request), Some(call)) => {
                approvals.spawn(approval::resolve_exec(
                    route(call.clone()),
                    Arc::clone(&conversation),
                    event.id,
                    request,
                ));
            }
            (EventMsg::ApplyPatchApprovalRequest(request), Some(call)) => {
                approvals.spawn(approval::resolve_patch(
                    route(call.clone()),
                    Arc::clone(&conversation),
                    event.id,
                    request,
                ));
            }
            (EventMsg::ExecApprovalRequest(request), None) => {
                decline(
                    &conversation,
                    keel_protocol::Op::ExecApproval {
                        id: request.call_id,
                        decision: keel_protocol::ReviewDecision::Denied,
                    },
                )
                .await;
            }
            (EventMsg::ApplyPatchApprovalRequest(request), None) => {
                decline(
                    &conversation,
                    keel_protocol::Op::PatchApproval {
                        id: request.call_id,
                        decision: keel_protocol::ReviewDecision::Denied,
                    },
                )
                .await;
            }
            (EventMsg::RequestUserInput(request), _) => {
                approval::answer_user_input_unasked(&conversation, request.call_id).await;
            }
            (EventMsg::ElicitationRequest(request), _) => {
                approval::decline_elicitation(&conversation, &request).await;
            }
            (EventMsg::ShutdownComplete, _) => break,
            _ => {}
        }
    }
    if let Some(context) = context.upgrade() {
        context.sub_agents.lock().remove(&thread_id);
    }
}

/// No `tools/call` to ask under: the request is declined (the model is told).
async fn decline(conversation: &keel_core::Conversation, answer: keel_protocol::Op) {
    tracing::warn!(thread = %conversation.id(), "a sub-agent asked for approval outside any tool call; declined");
    if let Err(err) = conversation.submit(answer).await {
        tracing::debug!("sub-agent gone before its approval was declined: {err}");
    }
}
