//! The conversation streaming tools: `conversationCreate`, `conversationSendMessage`,
//! `conversationStream` and `conversationStatus`.
//!
//! Each created conversation gets an event loop task that owns the reading end of its events.
//! While a stream is attached, events go out live as `codex/event` and approval requests as
//! elicitations. Otherwise events are buffered (up to [`BUFFER_CAPACITY`]) and approval
//! requests held. Attaching a stream sends one `initial_state` notification with the buffered
//! events (draining the buffer), then live events, then elicitations for held approvals.
//! Cancelling the stream call detaches it; buffering resumes, so reattaching catches up.
//! `conversationStatus` reports, without attaching, whether a stream is attached and what is
//! buffered and held.

use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::Arc;

use keel_core::Conversation;
use keel_protocol::mcp::{
    CodexEventMeta, ConversationCreateArgs, ConversationCreateResult, ConversationSendMessageArgs,
    ConversationSendMessageResult, ConversationStatusArgs, ConversationStatusResult,
    ConversationStreamArgs, HeldApproval, HeldApprovalKind, InitialState,
    InitialStateNotificationParams,
};
use keel_protocol::{ConversationId, Event, EventMsg, InputItem, Op, RequestId};
use tokio::sync::{Mutex, oneshot};
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

use crate::approval::{self, ApprovalRoute};
use rmcp::model::CallToolResult;

use crate::context::{RunningCall, ServerContext, send_event};
use crate::methods::mcp_server_notification;
use crate::outgoing::OutgoingSender;
use crate::results;
use crate::streamed_conversation::{StreamEnd, StreamState, StreamedConversation, Subscriber};

/// Events kept per conversation while nobody streams it; beyond this the oldest are dropped
/// (and the count logged), so an abandoned conversation cannot grow without bound. Approval
/// requests are held separately and never dropped.
pub(crate) const BUFFER_CAPACITY: usize = 10_000;

/// What the event loop needs besides the conversation.
#[derive(Clone)]
struct LoopDeps {
    outgoing: OutgoingSender,
    elicitation: bool,
}

fn stream_meta(request_id: &RequestId, id: ConversationId) -> CodexEventMeta {
    CodexEventMeta {
        request_id: Some(request_id.clone()),
        thread_id: Some(id),
        conversation_id: Some(id),
    }
}

fn parse_id(raw: &str) -> Result<ConversationId, CallToolResult> {
    ConversationId::from_str(raw)
        .map_err(|err| results::error(format!("invalid conversationId `{raw}`: {err}")))
}

fn structured<T: serde::Serialize>(text: String, value: &T) -> CallToolResult {
    match serde_json::to_value(value) {
        Ok(value) => results::success(text, value),
        Err(err) => results::error(format!("cannot encode the result: {err}")),
    }
}

/// `conversationCreate`: starts a conversation without a turn and its event loop.
pub(crate) async fn create(
    context: Arc<ServerContext>,
    args: ConversationCreateArgs,
) -> CallToolResult {
    let config = match context.settings.load_config(&args.settings) {
        Ok(config) => config,
        Err(err) => return results::error(format!("cannot configure the session: {err}")),
    };
    let new = match context.manager.new_conversation(config).await {
        Ok(new) => new,
        Err(err) => return results::error(format!("cannot start the session: {err}")),
    };
    let id = new.conversation_id;
    let state = Arc::new(Mutex::new(StreamState {
        subscriber: None,
        buffer: VecDeque::new(),
        dropped: 0,
        held_approvals: Vec::new(),
        approvals: JoinSet::new(),
    }));
    let deps = LoopDeps {
        outgoing: context.outgoing.clone(),
        elicitation: context.client_supports_elicitation(),
    };
    let event_loop = tokio::spawn(event_loop(
        deps,
        Arc::clone(&new.conversation),
        Arc::clone(&state),
    ));
    context.streams.lock().await.insert(
        id,
        StreamedConversation {
            conversation: new.conversation,
            state,
            _event_loop: AbortOnDropHandle::new(event_loop),
        },
    );
    let model = new.session_configured.model;
    structured(
        format!("created conversation {id} with model {model}"),
        &ConversationCreateResult {
            conversation_id: id,
            model,
        },
    )
}

/// `conversationSendMessage`: queues a user message.
pub(crate) async fn send_message(
    context: Arc<ServerContext>,
    args: ConversationSendMessageArgs,
) -> CallToolResult {
    let id = match parse_id(&args.conversation_id) {
        Ok(id) => id,
        Err(result) => return result,
    };
    let conversation = match context.streams.lock().await.get(&id) {
        Some(streamed) => Arc::clone(&streamed.conversation),
        None => return results::error(format!("no conversation with id {id}")),
    };
    let op = Op::UserInput {
        items: vec![InputItem::text(args.prompt)],
    };
    match conversation.submit(op).await {
        Ok(_) => structured(
            "sent".to_string(),
            &ConversationSendMessageResult { ok: true },
        ),
        Err(err) => results::error(format!("conversation {id}: {err}")),
    }
}

/// `conversationStream`: attaches this call as the conversation's stream until the call is
/// cancelled, another stream replaces it, or the conversation ends.
pub(crate) async fn stream(
    context: Arc<ServerContext>,
    request_id: RequestId,
    args: ConversationStreamArgs,
) -> CallToolResult {
    let id = match parse_id(&args.conversation_id) {
        Ok(id) => id,
        Err(result) => return result,
    };
    let (conversation, state) = match context.streams.lock().await.get(&id) {
        Some(streamed) => (
            Arc::clone(&streamed.conversation),
            Arc::clone(&streamed.state),
        ),
        None => return results::error(format!("no conversation with id {id}")),
    };
    let (done_tx, done_rx) = oneshot::channel();
    {
        let mut state = state.lock().await;
        // Under the state lock: a cancellation that finds this call running waits for the
        // lock in `cancel_stream`, and then finds the subscriber attached below.
        if context
            .mark_running(&request_id, RunningCall::Stream(id))
            .is_err()
        {
            return stream_ended(id, StreamEnd::Cancelled);
        }
        if let Some(previous) = state.subscriber.take() {
            previous.end(StreamEnd::Replaced);
        }
        let meta = stream_meta(&request_id, id);
        let events: Vec<Event> = state.buffer.drain(..).collect();
        if state.dropped > 0 {
            tracing::warn!(conversation = %id, dropped = state.dropped, "buffer overflowed; oldest events were dropped");
            state.dropped = 0;
        }
        let params = InitialStateNotificationParams {
            meta,
            initial_state: InitialState { events },
        };
        context
            .outgoing
            .send_notification::<mcp_server_notification::InitialState>(&params)
            .await;
        let route = ApprovalRoute {
            outgoing: context.outgoing.clone(),
            elicitation: context.client_supports_elicitation(),
            tool_call_id: request_id.clone(),
            thread_id: id,
        };
        for held in std::mem::take(&mut state.held_approvals) {
            spawn_approval(&mut state.approvals, &route, &conversation, held);
        }
        state.subscriber = Some(Subscriber {
            request_id,
            done: done_tx,
        });
    }
    let why = done_rx.await.unwrap_or(StreamEnd::ConversationClosed);
    stream_ended(id, why)
}

fn stream_ended(id: ConversationId, why: StreamEnd) -> CallToolResult {
    let text = match why {
        StreamEnd::Cancelled => format!("stream of conversation {id} cancelled"),
        StreamEnd::Replaced => format!("stream of conversation {id} replaced by a newer one"),
        StreamEnd::ConversationClosed => format!("conversation {id} has ended"),
    };
    results::text(text)
}

/// `conversationStatus`: a snapshot of the conversation's stream, buffer and held approvals.
pub(crate) async fn status(
    context: Arc<ServerContext>,
    args: ConversationStatusArgs,
) -> CallToolResult {
    let id = match parse_id(&args.conversation_id) {
        Ok(id) => id,
        Err(result) => return result,
    };
    let state = match context.streams.lock().await.get(&id) {
        Some(streamed) => Arc::clone(&streamed.state),
        None => return results::error(format!("no conversation with id {id}")),
    };
    let status = {
        let state = state.lock().await;
        ConversationStatusResult {
            conversation_id: id,
            streaming: state.subscriber.is_some(),
            buffered_events: state.buffer.len(),
            held_approvals: state.held_approvals.iter().filter_map(held).collect(),
        }
    };
    let text = format!(
        "conversation {id}: {}, {} buffered events, {} held approvals",
        if status.streaming {
            "streaming"
        } else {
            "not streaming"
        },
        status.buffered_events,
        status.held_approvals.len()
    );
    structured(text, &status)
}

fn held(event: &Event) -> Option<HeldApproval> {
    match &event.msg {
        EventMsg::ExecApprovalRequest(request) => Some(HeldApproval {
            kind: HeldApprovalKind::Exec,
            call_id: request.call_id.clone(),
        }),
        EventMsg::ApplyPatchApprovalRequest(request) => Some(HeldApproval {
            kind: HeldApprovalKind::Patch,
            call_id: request.call_id.clone(),
        }),
        _ => None,
    }
}

/// Detaches the stream attached by request `request_id`, if it is still attached.
pub(crate) async fn cancel_stream(
    context: &ServerContext,
    id: ConversationId,
    request_id: &RequestId,
) {
    let state = match context.streams.lock().await.get(&id) {
        Some(streamed) => Arc::clone(&streamed.state),
        None => return,
    };
    let mut state = state.lock().await;
    if state
        .subscriber
        .as_ref()
        .is_some_and(|subscriber| &subscriber.request_id == request_id)
        && let Some(subscriber) = state.subscriber.take()
    {
        subscriber.end(StreamEnd::Cancelled);
    }
}

fn spawn_approval(
    approvals: &mut JoinSet<()>,
    route: &ApprovalRoute,
    conversation: &Arc<Conversation>,
    event: Event,
) {
    while approvals.try_join_next().is_some() {}
    match event.msg {
        EventMsg::ExecApprovalRequest(request) => {
            approvals.spawn(approval::resolve_exec(
                route.clone(),
                Arc::clone(conversation),
                event.id,
                request,
            ));
        }
        EventMsg::ApplyPatchApprovalRequest(request) => {
            approvals.spawn(approval::resolve_patch(
                route.clone(),
                Arc::clone(conversation),
                event.id,
                request,
            ));
        }
        _ => {}
    }
}

fn is_approval(event: &Event) -> bool {
    held(event).is_some()
}

/// Reads every event of the conversation and delivers or buffers it; ends when the
/// conversation shuts down (or when its [`StreamedConversation`] is dropped).
async fn event_loop(
    deps: LoopDeps,
    conversation: Arc<Conversation>,
    state: Arc<Mutex<StreamState>>,
) {
    let id = conversation.id();
    while let Ok(event) = conversation.next_event().await {
        if let EventMsg::RequestUserInput(request) = &event.msg {
            approval::answer_user_input_unasked(&conversation, request.call_id.clone()).await;
        }
        if let EventMsg::ElicitationRequest(request) = &event.msg {
            approval::decline_elicitation(&conversation, request).await;
        }
        let mut state = state.lock().await;
        let state = &mut *state;
        match &state.subscriber {
            Some(subscriber) => {
                let request_id = subscriber.request_id.clone();
                send_event(&deps.outgoing, &stream_meta(&request_id, id), event.clone()).await;
                if is_approval(&event) {
                    let route = ApprovalRoute {
                        outgoing: deps.outgoing.clone(),
                        elicitation: deps.elicitation,
                        tool_call_id: request_id,
                        thread_id: id,
                    };
                    spawn_approval(&mut state.approvals, &route, &conversation, event);
                }
            }
            None => {
                if is_approval(&event) {
                    state.held_approvals.push(event.clone());
                }
                if state.buffer.len() == BUFFER_CAPACITY {
                    state.buffer.pop_front();
                    state.dropped += 1;
                }
                state.buffer.push_back(event);
            }
        }
    }
    tracing::debug!(conversation = %id, "conversation ended; its event loop stops");
    if let Some(subscriber) = state.lock().await.subscriber.take() {
        subscriber.end(StreamEnd::ConversationClosed);
    }
}
