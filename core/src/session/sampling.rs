//! Sampling, the leaf every turn body calls: ask the model, stream what it says as events,
//! run the tools it calls and feed their outputs back, until it answers without a call.
//! Retries, automatic compaction and the hooks around each request and call live here.

use std::sync::Arc;
use std::time::Duration;

use keel_protocol::{
    AgentMessageDeltaEvent, AgentMessageEvent, AgentReasoningDeltaEvent, AgentReasoningEvent,
    AgentReasoningSectionBreakEvent, EventMsg, StreamErrorEvent, TokenCountEvent,
};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::Session;
use super::compact::compact;
use crate::client::{Prompt, ResponseEvent};
use crate::error::CoreError;
use crate::models::{ReasoningSummary, ResponseItem};
use crate::prompt_context::build_prompt;
use crate::tools::{self, ToolContext, ToolHost, ToolRegistry, TurnDiffTracker};
use crate::turn_context::{TurnIds, TurnStop};

/// Samples and runs tools until the model stops calling them. Returns the last message.
pub(super) async fn turn_loop(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
) -> Result<Option<String>, TurnStop> {
    let mut last_agent_message = None;
    let mut stop_continuations = 0;
    let diff = Arc::new(std::sync::Mutex::new(TurnDiffTracker::default()));
    let ids = Arc::new(ids.clone());
    let host: Arc<dyn ToolHost> = session.clone();
    let mcp_tools = mcp_tools(session, cancel).await?;
    // Scripts still running when the turn ends (however it ends) stop with it.
    let _cells = TerminateCells(session.code_cells().clone());
    loop {
        // A record that already failed (the turn's start, say, on a thread another server
        // took over) stops the turn before it asks the model anything.
        stop_if_unrecorded(session)?;
        session.drain_pending_input().await;
        // Before a new turn's first request, or after a tool round: compact when the last
        // response filled the context up to the limit.
        let mut compacted = auto_compact_if_full(session, &ids, cancel).await?;
        let (items, registry) =
            sample_step(session, &ids, cancel, mcp_tools.as_deref(), &mut compacted).await?;
        let registry = Arc::new(registry);
        session.record_items(&items).await;
        stop_if_unrecorded(session)?;
        let context = session.turn_context();

        let mut calls = Vec::new();
        for item in &items {
            if let Some(text) = item.assistant_text() {
                last_agent_message = Some(text);
            }
            if item.tool_call_id().is_some() {
                calls.push(item.clone());
            }
        }
        if calls.is_empty() {
            if let Some(prompt) = super::hook_points::stop(
                session,
                &ids,
                &context,
                last_agent_message.as_deref(),
                stop_continuations,
            )
            .await
            {
                // A Stop hook wants more: the turn goes on with its reason.
                stop_continuations += 1;
                session.record_items(&[prompt]).await;
                stop_if_unrecorded(session)?;
                continue;
            }
            if session.finish_turn_unless_pending(&ids.sub_id) {
                continue;
            }
            return Ok(last_agent_message);
        }
        run_calls(
            session, &ids, &host, &context, &registry, cancel, &diff, calls,
        )
        .await?;
    }
}

/// One model request for the turn, with the hooks around it; a context overflow compacts the
/// history and asks again (once per step). Returns the response's items and the tools offered.
async fn sample_step(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    mcp_tools: Option<&crate::mcp::McpToolCatalog>,
    compacted: &mut bool,
) -> Result<(Vec<ResponseItem>, ToolRegistry), TurnStop> {
    loop {
        let context = session.turn_context();
        let registry = crate::code_mode::registry(
            &context,
            tools::registry_for(&context, mcp_tools, session.embedder_tools()),
        );
        let mut prompt = build_prompt(&context, session.history(), registry.specs().to_vec());
        let metadata = super::request_metadata::request_metadata(session, ids, &context, "turn");
        // A sub-agent's requests share its tree's session, as Codex's do.
        prompt.conversation_id = Some(metadata.session_id.clone());
        prompt.output_schema = ids.output_schema.clone();
        prompt.metadata = Some(metadata);
        if session.is_reviewing() {
            prompt.instructions = crate::review::REVIEW_INSTRUCTIONS.to_string();
        }
        super::hook_points::fire(
            session,
            ids,
            &context,
            crate::hooks::HookEvent::PreModelRequest,
            None,
            serde_json::json!({}),
        )
        .await;
        let sampled = sample_with_retries(session, ids, &prompt, cancel).await;
        super::hook_points::fire(
            session,
            ids,
            &context,
            crate::hooks::HookEvent::PostModelRequest,
            None,
            serde_json::json!({
                "status": match &sampled {
                    Ok(_) => "completed",
                    Err(TurnStop::Interrupted) => "cancelled",
                    Err(TurnStop::Failed(_)) => "failed",
                },
                "error": match &sampled {
                    Err(TurnStop::Failed(err)) => Some(err.to_string()),
                    _ => None,
                },
            }),
        )
        .await;
        match sampled {
            Ok(items) => return Ok((items, registry)),
            Err(TurnStop::Failed(err)) if err.is_context_overflow() => {
                if *compacted {
                    return Err(TurnStop::Failed(CoreError::ContextWindowExceeded(
                        err.to_string(),
                    )));
                }
                tracing::info!(conversation = %session.id(), "{err}; compacting and retrying");
                compact(session, ids, cancel, None, "auto").await?;
                *compacted = true;
            }
            Err(stop) => return Err(stop),
        }
    }
}

/// Runs the response's tool calls in order (with the hooks around each) and records their
/// outputs.
#[expect(
    clippy::too_many_arguments,
    reason = "the pieces of one turn's tool round"
)]
async fn run_calls(
    session: &Arc<Session>,
    ids: &Arc<TurnIds>,
    host: &Arc<dyn ToolHost>,
    context: &Arc<crate::turn_context::TurnContext>,
    registry: &Arc<ToolRegistry>,
    cancel: &CancellationToken,
    diff: &Arc<std::sync::Mutex<TurnDiffTracker>>,
    calls: Vec<ResponseItem>,
) -> Result<(), TurnStop> {
    let calls_of = CallsOfTurn {
        session: session.clone(),
        ids: ids.clone(),
        host: host.clone(),
        context: context.clone(),
        registry: registry.clone(),
        cancel: cancel.clone(),
        diff: diff.clone(),
    };
    for call in calls {
        let Some(call_id) = call.tool_call_id() else {
            continue;
        };
        let ctx = calls_of.context_for(call_id);
        let calls_of = &calls_of;
        // A script's `notify()` values, each an output item after the call's own.
        let notes = std::sync::Mutex::new(Vec::new());
        let notes_ref = &notes;
        let items =
            super::hook_points::around_tool_call(session, ids, context, &call, |call| async move {
                match registry.script_tools() {
                    Some(tools) if crate::code_mode::is_own_call(&call) => {
                        let (output, extra) = crate::code_mode::run_call(
                            calls_of.session.code_cells(),
                            tools,
                            &call,
                            calls_of.nested_runner(),
                            ctx,
                        )
                        .await;
                        if let Ok(mut notes) = notes_ref.lock() {
                            *notes = extra;
                        }
                        Ok(output)
                    }
                    _ => registry.dispatch(ctx, &call).await,
                }
            })
            .await?;
        session.record_items(&items).await;
        let notes = notes.into_inner().unwrap_or_default();
        if !notes.is_empty() {
            session.record_items(&notes).await;
        }
        stop_if_unrecorded(session)?;
    }
    Ok(())
}

/// Everything a tool call of this turn runs with, so code mode's scripts can make calls of
/// their own the same way, after the call that started them returned.
#[derive(Clone)]
struct CallsOfTurn {
    session: Arc<Session>,
    ids: Arc<TurnIds>,
    host: Arc<dyn ToolHost>,
    context: Arc<crate::turn_context::TurnContext>,
    registry: Arc<ToolRegistry>,
    cancel: CancellationToken,
    diff: Arc<std::sync::Mutex<TurnDiffTracker>>,
}

impl CallsOfTurn {
    fn context_for(&self, call_id: &str) -> ToolContext {
        ToolContext {
            host: self.host.clone(),
            turn: self.context.clone(),
            ids: self.ids.clone(),
            cancel: self.cancel.clone(),
            call_id: keel_protocol::CallId::new(call_id),
            diff: self.diff.clone(),
            trace: crate::telemetry::ToolTrace::default(),
        }
    }

    /// Runs a script's call through the hooks and the registry, as a model's call runs.
    fn nested_runner(&self) -> crate::code_mode::NestedRunner {
        let calls = self.clone();
        Arc::new(move |request: crate::code_mode::NestedRequest| {
            let calls = calls.clone();
            Box::pin(async move {
                let freeform = calls.registry.is_freeform(&request.tool);
                let call = crate::code_mode::nested_call_item(&request, freeform)?;
                let ctx = calls.context_for(&request.call_id);
                let registry = calls.registry.clone();
                let items = super::hook_points::around_tool_call(
                    &calls.session,
                    &calls.ids,
                    &calls.context,
                    &call,
                    |call| async move { registry.dispatch(ctx, &call).await },
                )
                .await
                .map_err(|stop| match stop {
                    TurnStop::Interrupted => "the turn was interrupted".to_string(),
                    TurnStop::Failed(err) => err.to_string(),
                })?;
                let output = items
                    .iter()
                    .find(|item| item.tool_output_call_id().is_some())
                    .ok_or_else(|| format!("tool `{}` returned nothing", request.tool))?;
                crate::code_mode::nested_result(&request.tool, output)
            })
        })
    }
}

/// Stops the conversation's running scripts when dropped: at the end of the turn.
struct TerminateCells(Arc<crate::code_mode::CellStore>);

impl Drop for TerminateCells {
    fn drop(&mut self) {
        self.0.terminate_all();
    }
}

/// Fails the turn once the conversation can no longer be recorded (a full disk, say): the
/// client hears why, and nothing more happens that a resume would not know about.
fn stop_if_unrecorded(session: &Session) -> Result<(), TurnStop> {
    match session.take_rollout_failure() {
        Some(failure) => Err(TurnStop::Failed(CoreError::RecordingFailed(failure))),
        None => Ok(()),
    }
}

/// The MCP tools to offer, once the configured servers have started (the first turn waits
/// for the slowest, bounded by its `startup_timeout_sec`); `None` without servers. A failed
/// `required` server fails the turn.
async fn mcp_tools(
    session: &Session,
    cancel: &CancellationToken,
) -> Result<Option<Arc<crate::mcp::McpToolCatalog>>, TurnStop> {
    if session.mcp().is_empty() {
        return Ok(None);
    }
    let catalog = tokio::select! {
        catalog = session.mcp_catalog() => catalog,
        () = cancel.cancelled() => return Err(TurnStop::Interrupted),
    };
    if !catalog.required_failures.is_empty() {
        let failures: Vec<String> = catalog
            .required_failures
            .iter()
            .map(|failure| failure.error.clone())
            .collect();
        return Err(TurnStop::Failed(CoreError::McpRequired(
            failures.join("; "),
        )));
    }
    Ok(Some(catalog))
}

/// Compacts the history when the latest response's token count reached the limit; at most
/// once per sampling step, since a compaction clears the count until the next response. A
/// failed automatic compaction is reported as a warning and the turn goes on uncompacted.
/// Returns whether a compaction ran.
pub(super) async fn auto_compact_if_full(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
) -> Result<bool, TurnStop> {
    let context = session.turn_context();
    // A review's short history is not the conversation's: nothing to compact there.
    if session.is_reviewing() {
        return Ok(false);
    }
    let (Some(limit), Some(used)) = (
        context.auto_compact_token_limit,
        session.last_response_tokens(),
    ) else {
        return Ok(false);
    };
    if used < limit {
        return Ok(false);
    }
    tracing::info!(conversation = %session.id(), used, limit, "compacting the history");
    match compact(session, ids, cancel, None, "auto").await {
        Ok(()) => Ok(true),
        // A provider that compacts remotely and fails ends the turn, as in Codex: the
        // history has grown past what it serves.
        Err(TurnStop::Failed(err)) if !context.remote_compaction => {
            session
                .send_event(
                    &ids.sub_id,
                    EventMsg::Warning(keel_protocol::WarningEvent {
                        message: format!("{err}; continuing with the full history"),
                    }),
                )
                .await;
            Ok(false)
        }
        Err(stop) => Err(stop),
    }
}

/// The longest wait between retries, whatever the provider asks.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Delay before retry `attempt` (1-based): exponential from 200 ms with ±10% jitter, capped.
fn backoff(attempt: u64) -> Duration {
    let base = 200u64.saturating_mul(1 << attempt.saturating_sub(1).min(8));
    let jitter = rand::rng().random_range(0.9..1.1);
    Duration::from_millis(((base.min(30_000)) as f64 * jitter) as u64)
}

/// Samples once, retrying per the provider's budgets; each retry is reported to the user.
async fn sample_with_retries(
    session: &Session,
    ids: &TurnIds,
    prompt: &Prompt,
    cancel: &CancellationToken,
) -> Result<Vec<ResponseItem>, TurnStop> {
    let context = session.turn_context();
    let mut request_retries = 0;
    let mut stream_retries = 0;
    loop {
        let attempt = request_retries + stream_retries + 1;
        let err = match sample_once(session, ids, prompt, cancel, attempt).await {
            Ok(items) => return Ok(items),
            Err(TurnStop::Failed(err)) if err.is_retryable() => err,
            Err(stop) => return Err(stop),
        };
        let (used, budget) = if err.is_stream_failure() {
            (&mut stream_retries, context.stream_max_retries)
        } else {
            (&mut request_retries, context.request_max_retries)
        };
        if *used >= budget {
            return Err(TurnStop::Failed(err));
        }
        *used += 1;
        // A provider's Retry-After is honoured up to the backoff cap, so one odd header
        // cannot park a turn for hours.
        let delay = err
            .retry_after()
            .map(|after| after.min(MAX_RETRY_DELAY))
            .unwrap_or_else(|| backoff(*used));
        let message = format!(
            "{err}; retrying {}/{budget} in {}ms",
            *used,
            delay.as_millis()
        );
        tracing::info!(conversation = %session.id(), "{message}");
        session
            .send_event(
                &ids.sub_id,
                EventMsg::StreamError(StreamErrorEvent { message }),
            )
            .await;
        tokio::select! {
            () = cancel.cancelled() => return Err(TurnStop::Interrupted),
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// The engine events for a completed response's messages and reasoning summaries.
async fn announce_completed_items(session: &Session, ids: &TurnIds, items: &[ResponseItem]) {
    for item in items {
        if let Some(message) = item.assistant_text() {
            session
                .send_event(
                    &ids.sub_id,
                    EventMsg::AgentMessage(AgentMessageEvent { message }),
                )
                .await;
        }
        if let ResponseItem::Reasoning { summary, .. } = item {
            for ReasoningSummary::SummaryText { text } in summary {
                session
                    .send_event(
                        &ids.sub_id,
                        EventMsg::AgentReasoning(AgentReasoningEvent { text: text.clone() }),
                    )
                    .await;
            }
        }
    }
}

/// One model request: streams deltas as events and returns the completed items.
async fn sample_once(
    session: &Session,
    ids: &TurnIds,
    prompt: &Prompt,
    cancel: &CancellationToken,
    attempt: u64,
) -> Result<Vec<ResponseItem>, TurnStop> {
    let context = session.turn_context();
    let mut trace = ids.trace.model_request(attempt);
    let mut stream = tokio::select! {
        () = cancel.cancelled() => return Err(TurnStop::Interrupted),
        stream = context.client.stream(prompt) => match stream {
            Ok(stream) => {
                trace.answered(crate::telemetry::RequestOutcome { status: Some(200), error: None });
                stream
            }
            Err(err) => {
                trace.answered(crate::telemetry::RequestOutcome {
                    status: err.http_status(),
                    error: Some(err.to_string()),
                });
                return Err(TurnStop::Failed(err));
            }
        },
    };
    if let Some(limits) = stream.rate_limits() {
        session
            .send_event(&ids.sub_id, EventMsg::RateLimits(limits.clone()))
            .await;
    }
    let mut items = Vec::new();
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return Err(TurnStop::Interrupted),
            event = stream.next() => event,
        };
        let event = match event {
            Some(Ok(event)) => event,
            Some(Err(err)) => {
                trace.failed(&err.to_string());
                return Err(TurnStop::Failed(err));
            }
            None => {
                let err = CoreError::Stream("stream closed before response.completed".to_string());
                trace.failed(&err.to_string());
                return Err(TurnStop::Failed(err));
            }
        };
        if let Some(kind) = event.sse_kind() {
            trace.sse_event(kind);
        }
        match event {
            ResponseEvent::Created => {}
            ResponseEvent::OutputTextDelta(delta) => {
                session
                    .send_event(
                        &ids.sub_id,
                        EventMsg::AgentMessageDelta(AgentMessageDeltaEvent { delta }),
                    )
                    .await;
            }
            ResponseEvent::ReasoningSummaryPartAdded { summary_index } => {
                session
                    .send_event(
                        &ids.sub_id,
                        EventMsg::AgentReasoningSectionBreak(AgentReasoningSectionBreakEvent {
                            summary_index,
                        }),
                    )
                    .await;
            }
            ResponseEvent::ReasoningSummaryDelta(delta) => {
                session
                    .send_event(
                        &ids.sub_id,
                        EventMsg::AgentReasoningDelta(AgentReasoningDeltaEvent { delta }),
                    )
                    .await;
            }
            // Announced only once the response completes: an attempt that fails before that
            // is retried from scratch, and its items were never part of the history.
            ResponseEvent::OutputItemDone(item) => items.push(item),
            ResponseEvent::Completed { token_usage, .. } => {
                let called_tools = items.iter().any(|item| item.tool_call_id().is_some());
                trace.completed(
                    token_usage.as_ref(),
                    if called_tools { "tool_calls" } else { "stop" },
                );
                announce_completed_items(session, ids, &items).await;
                let info = match token_usage {
                    Some(usage) => {
                        super::goal_accounting::account_response(session, ids, &usage).await;
                        Some(session.add_token_usage(&usage, context.model_context_window))
                    }
                    None => session.token_info(),
                };
                session
                    .send_event(&ids.sub_id, EventMsg::TokenCount(TokenCountEvent { info }))
                    .await;
                return Ok(items);
            }
        }
    }
}
