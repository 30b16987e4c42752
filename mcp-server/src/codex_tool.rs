//! The `codex` and `codex-reply` tools: run one turn of a conversation, forward every event
//! as `codex/event`, route approvals to the client, and return the final message.

use std::str::FromStr;
use std::sync::Arc;

use keel_core::Conversation;
use keel_protocol::mcp::{
    CodexEventMeta, CodexToolCallParam, CodexToolCallReplyParam, CodexToolCallResult,
};
use keel_protocol::{
    ConversationId, Event, EventMsg, InputItem, Op, RequestId, Submission, SubmissionId,
};
use tokio::task::JoinSet;

use crate::approval::{self, ApprovalRoute};
use rmcp::model::CallToolResult;

use crate::context::{RunningCall, ServerContext};
use crate::results;

/// Runs the `codex` tool: starts a conversation and runs its first turn.
pub(crate) async fn run_codex(
    context: Arc<ServerContext>,
    request_id: RequestId,
    args: CodexToolCallParam,
    elicitation: bool,
) -> CallToolResult {
    let config = match context.settings.load_config(&args.settings) {
        Ok(config) => config,
        Err(err) => return results::error(format!("cannot configure the session: {err}")),
    };
    let new = match context.manager.new_conversation(config).await {
        Ok(new) => new,
        Err(err) => return results::error(format!("cannot start the session: {err}")),
    };
    let meta = event_meta(&request_id, new.conversation_id);
    // The engine returns `session_configured` instead of queueing it; clients expect it as
    // the first event of the call.
    let first = Event {
        id: SubmissionId::new(""),
        msg: EventMsg::SessionConfigured(new.session_configured),
    };
    context.send_event(&meta, first).await;
    run_turn(
        context,
        request_id,
        new.conversation,
        args.prompt,
        elicitation,
    )
    .await
}

/// Runs the `codex-reply` tool: one more turn of an existing conversation.
pub(crate) async fn run_codex_reply(
    context: Arc<ServerContext>,
    request_id: RequestId,
    args: CodexToolCallReplyParam,
    elicitation: bool,
) -> CallToolResult {
    let Some(raw) = args.thread_id.or(args.conversation_id) else {
        return results::error("codex-reply needs `threadId`: the id the `codex` tool returned");
    };
    let thread_id = match ConversationId::from_str(&raw) {
        Ok(id) => id,
        Err(err) => return results::error(format!("invalid threadId `{raw}`: {err}")),
    };
    if context.streams.lock().await.contains_key(&thread_id) {
        return results::error(format!(
            "thread {thread_id} is driven by the conversation tools; use conversationSendMessage"
        ));
    }
    let conversation = match context.manager.get_conversation(thread_id).await {
        Ok(conversation) => conversation,
        Err(_) => return results::error(format!("no thread with id {thread_id}")),
    };
    run_turn(context, request_id, conversation, args.prompt, elicitation).await
}

/// The result text of a call cancelled by the client, before or during its turn.
const INTERRUPTED: &str = "the turn was interrupted";

fn event_meta(request_id: &RequestId, thread_id: ConversationId) -> CodexEventMeta {
    CodexEventMeta {
        request_id: Some(request_id.clone()),
        thread_id: Some(thread_id),
        conversation_id: None,
    }
}

/// Submits the prompt and forwards events until the turn completes, fails or is interrupted;
/// approvals are asked of the client when `elicitation` says it can answer them.
async fn run_turn(
    context: Arc<ServerContext>,
    request_id: RequestId,
    conversation: Arc<Conversation>,
    prompt: String,
    elicitation: bool,
) -> CallToolResult {
    let thread_id = conversation.id();
    let Some(_thread) = context.claim_thread(thread_id) else {
        return results::error(format!(
            "thread {thread_id} is already running a call; wait for it to finish"
        ));
    };
    if context.cancelled_while_starting(&request_id) {
        return result_error(thread_id, format!("{INTERRUPTED} before it started"));
    }
    // The tool call's id becomes the submission id, so every event of the turn carries it.
    let submission = Submission {
        id: SubmissionId::new(request_id.to_string()),
        op: Op::UserInput {
            items: vec![InputItem::text(prompt)],
        },
    };
    if let Err(err) = conversation.submit_with_id(submission).await {
        return results::error(format!("cannot start the turn: {err}"));
    }
    // Marked running only once the turn is queued, so the processor's interrupt for a later
    // cancellation always lands after the turn's input, never before it.
    if context
        .mark_running(&request_id, RunningCall::Turn(Arc::clone(&conversation)))
        .is_err()
    {
        // Cancelled since the check above: interrupt the turn just queued; the loop below
        // reports the abort.
        if let Err(err) = conversation.submit(Op::Interrupt).await {
            return result_error(thread_id, format!("the session stopped: {err}"));
        }
    }
    let meta = event_meta(&request_id, thread_id);
    let route = ApprovalRoute {
        outgoing: context.outgoing.clone(),
        elicitation,
        tool_call_id: request_id,
        thread_id,
    };
    // Approval tasks wait for the client; they are aborted if the call ends first.
    let mut approvals = JoinSet::new();
    loop {
        let event = match conversation.next_event().await {
            Ok(event) => event,
            Err(err) => return result_error(thread_id, format!("the session stopped: {err}")),
        };
        while approvals.try_join_next().is_some() {}
        context.send_event(&meta, event.clone()).await;
        match event.msg {
            EventMsg::ExecApprovalRequest(request) => {
                approvals.spawn(approval::resolve_exec(
                    route.clone(),
                    Arc::clone(&conversation),
                    event.id,
                    request,
                ));
            }
            EventMsg::ApplyPatchApprovalRequest(request) => {
                approvals.spawn(approval::resolve_patch(
                    route.clone(),
                    Arc::clone(&conversation),
                    event.id,
                    request,
                ));
            }
            EventMsg::RequestUserInput(request) => {
                approval::answer_user_input_unasked(&conversation, request.call_id).await;
            }
            EventMsg::ElicitationRequest(request) => {
                approval::decline_elicitation(&conversation, &request).await;
            }
            EventMsg::TaskComplete(done) => {
                let content = done.last_agent_message.unwrap_or_default();
                return result(thread_id, content, false);
            }
            EventMsg::TurnAborted(_) => {
                return result_error(thread_id, INTERRUPTED.to_string());
            }
            EventMsg::Error(err) => return result_error(thread_id, err.message),
            _ => {}
        }
    }
}

fn result_error(thread_id: ConversationId, message: String) -> CallToolResult {
    result(thread_id, message, true)
}

/// A result carrying the thread id in `structuredContent` even on failure, so the client can
/// continue the thread.
fn result(thread_id: ConversationId, content: String, is_error: bool) -> CallToolResult {
    let structured = CodexToolCallResult {
        thread_id,
        content: content.clone(),
    };
    match serde_json::to_value(&structured) {
        Ok(structured) => {
            let mut result = results::success(content, structured);
            if is_error {
                result.is_error = Some(true);
            }
            result
        }
        Err(err) => results::error(format!("cannot encode the result: {err}")),
    }
}
