//! One turn: sample the model, run the tools it calls, feed the outputs back, and repeat
//! until it answers without tool calls.

use std::sync::Arc;
use std::time::Duration;

use keel_protocol::{
    AgentMessageDeltaEvent, AgentMessageEvent, AgentReasoningDeltaEvent, AgentReasoningEvent,
    AgentReasoningSectionBreakEvent, ErrorEvent, EventMsg, InputItem, StreamErrorEvent,
    SubmissionId, TaskCompleteEvent, TaskStartedEvent, TokenCountEvent, TurnAbortReason,
    TurnAbortedEvent, TurnId, UserMessageEvent,
};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::Session;
use super::compact::compact;
use super::submission_loop::user_input_item;
use crate::client::{Prompt, ResponseEvent};
use crate::error::CoreError;
use crate::models::{ReasoningSummary, ResponseItem, outputs_for_unanswered_calls};
use crate::prompt_context::build_prompt;
use crate::tools::{self, ToolContext, ToolHost, TurnDiffTracker};
use crate::turn_context::{TurnIds, TurnStop};

/// What a turn does.
pub(crate) enum TurnTask {
    /// Answer the user's input (the usual turn).
    UserInput(Vec<InputItem>),
    /// Compact the history, with these instructions instead of the configured ones.
    Compact(Option<String>),
    /// Review a change (a fresh history, the reviewer's instructions, a verdict).
    Review(keel_protocol::ReviewRequest),
    /// Keep working toward the thread's active goal.
    GoalContinuation,
    /// Run the user's own command (no model request).
    UserShell {
        /// The command line.
        command: String,
        /// How long it may run.
        timeout: Duration,
    },
}

/// Runs a whole turn and reports how it ended. Never returns an error: failures become
/// `error` / `turn_aborted` events and the conversation stays usable.
pub(crate) async fn run_turn(
    session: Arc<Session>,
    sub_id: SubmissionId,
    task: TurnTask,
    cancel: CancellationToken,
) {
    let output_schema = match &task {
        TurnTask::UserInput(_) => session.take_next_output_schema(),
        TurnTask::Compact(_) => None,
        TurnTask::Review(_) => Some(crate::review::review_output_schema()),
        TurnTask::GoalContinuation | TurnTask::UserShell { .. } => None,
    };
    // Only the turns that work for the user lead on to the goal's next turn.
    let leads_on = matches!(task, TurnTask::UserInput(_) | TurnTask::GoalContinuation);
    let ids = TurnIds {
        turn_id: TurnId::new(sub_id.as_str()),
        sub_id,
        output_schema,
    };
    super::environment::apply_environment_move(&session, &ids).await;
    // The turns that may change files are checkpointed, so a revert can put them back; not
    // in a remote environment, whose files are not on this host.
    let checkpoints = session.checkpoints().filter(|_| {
        session.processes().is_local()
            && matches!(
                task,
                TurnTask::UserInput(_) | TurnTask::GoalContinuation | TurnTask::UserShell { .. }
            )
    });
    if let Some(checkpoints) = &checkpoints {
        let root = session.turn_context().cwd.clone();
        checkpoint(checkpoints.clone(), ids.turn_id.to_string(), Some(root)).await;
    }
    let context = session.turn_context();
    session.start_turn_usage();
    let clock = TurnClock::start();
    session
        .send_event(
            &ids.sub_id,
            EventMsg::TaskStarted(TaskStartedEvent {
                turn_id: ids.turn_id.clone(),
                model_context_window: context.model_context_window,
                started_at: Some(clock.started_at),
            }),
        )
        .await;
    let outcome = match task {
        TurnTask::UserInput(input) => {
            // A context filled by the previous turn is compacted before the new input joins
            // it, so the summary comes before the request it is meant to serve.
            match auto_compact_if_full(&session, &ids, &cancel).await {
                Err(stop) => Err(stop),
                Ok(_) => {
                    let context =
                        super::environment::with_environment_docs(&session, &ids, context).await;
                    let context =
                        super::hook_points::refresh_skills(&session, &ids, context.clone()).await;
                    let context = super::hook_points::refresh_hook_choices(&session, context);
                    super::hook_points::warn_held_back_once(&session, &ids, &context).await;
                    let source = if session.history().is_empty() {
                        "startup"
                    } else {
                        "resume"
                    };
                    let start_context =
                        super::hook_points::session_start_once(&session, &ids, &context, source)
                            .await;
                    session.record_items(&start_context).await;
                    let message = user_message_event(&input);
                    match super::hook_points::user_prompt_submit(
                        &session,
                        &ids,
                        &context,
                        &message.message,
                    )
                    .await
                    {
                        // A hook dropped the prompt: the turn ends with nothing recorded.
                        Err(reason) => {
                            tracing::info!(conversation = %session.id(), "a UserPromptSubmit hook dropped the prompt: {reason}");
                            Ok(None)
                        }
                        Ok(hook_context) => {
                            // Skills the user names (`$name`) come with the message they are
                            // named in; hook context follows.
                            let mut items = vec![user_input_item(&context.cwd, &input)];
                            items.extend(crate::skills::attached_skill_items(
                                &context.skills,
                                &input,
                            ));
                            items.extend(hook_context);
                            session.record_items(&items).await;
                            session
                                .send_event(&ids.sub_id, EventMsg::UserMessage(message))
                                .await;
                            turn_loop(&session, &ids, &cancel).await
                        }
                    }
                }
            }
        }
        TurnTask::Review(request) => {
            super::review::run_review(&session, &ids, &cancel, request).await
        }
        TurnTask::UserShell { command, timeout } => {
            match super::user_shell::run(&session, &ids, &cancel, &command, timeout).await {
                Ok(note) => {
                    session.record_items(&[note]).await;
                    session.clear_active_turn(&ids.sub_id);
                    Ok(None)
                }
                Err(stop) => Err(stop),
            }
        }
        TurnTask::GoalContinuation => match session.goals().get() {
            // Cleared or stopped since the turn was asked for: nothing to do.
            Some(goal) if goal.status == keel_protocol::ThreadGoalStatus::Active => {
                session
                    .record_items(&[crate::goals::continuation_message(&goal)])
                    .await;
                turn_loop(&session, &ids, &cancel).await
            }
            _ => {
                session.clear_active_turn(&ids.sub_id);
                Ok(None)
            }
        },
        TurnTask::Compact(instructions) => {
            let done = compact(&session, &ids, &cancel, instructions.as_deref(), "manual").await;
            if done.is_ok() {
                session.clear_active_turn(&ids.sub_id);
            }
            done.map(|()| None)
        }
    };
    if let Some(checkpoints) = checkpoints {
        checkpoint(checkpoints, ids.turn_id.to_string(), None).await;
    }
    match outcome {
        Ok(last_agent_message) => {
            session
                .send_event(
                    &ids.sub_id,
                    EventMsg::TaskComplete(TaskCompleteEvent {
                        turn_id: ids.turn_id.clone(),
                        last_agent_message,
                        completed_at: Some(unix_now()),
                        duration_ms: Some(clock.elapsed_ms()),
                    }),
                )
                .await;
            if leads_on {
                super::goal_turns::continue_goal(&session, ids.sub_id.clone());
            }
        }
        Err(stop) => {
            session.clear_active_turn(&ids.sub_id);
            close_dangling_calls(&session).await;
            if matches!(stop, TurnStop::Interrupted) {
                // An interrupt stops everything the model started, long-lived processes too.
                crate::tools::close_all_sessions(session.as_ref(), &ids).await;
                super::hook_points::fire(
                    &session,
                    &ids,
                    &session.turn_context(),
                    crate::hooks::HookEvent::Interrupt,
                    None,
                    serde_json::json!({}),
                )
                .await;
            }
            let msg = match stop {
                TurnStop::Interrupted => EventMsg::TurnAborted(TurnAbortedEvent {
                    turn_id: Some(ids.turn_id.clone()),
                    reason: TurnAbortReason::Interrupted,
                    completed_at: Some(unix_now()),
                    duration_ms: Some(clock.elapsed_ms()),
                }),
                TurnStop::Failed(err) => EventMsg::Error(ErrorEvent {
                    message: err.user_message(),
                    codex_error_info: err.error_info(),
                }),
            };
            if let EventMsg::Error(error) = &msg {
                let usage_limit = error.codex_error_info
                    == Some(keel_protocol::CodexErrorInfo::UsageLimitExceeded);
                super::goal_turns::turn_failed(&session, &ids, usage_limit).await;
            }
            session.send_event(&ids.sub_id, msg).await;
        }
    }
}

/// When a turn started, for the times its start and end events carry.
struct TurnClock {
    started_at: i64,
    started: std::time::Instant,
}

impl TurnClock {
    fn start() -> Self {
        Self {
            started_at: unix_now(),
            started: std::time::Instant::now(),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// The current time in Unix seconds (0 if the clock is before 1970).
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}

/// Records the workspace before a turn (with its root) or after it; a failure is logged, and
/// only means that turn's files cannot be restored.
async fn checkpoint(
    checkpoints: Arc<crate::checkpoints::Checkpoints>,
    turn_id: String,
    before_in: Option<std::path::PathBuf>,
) {
    let done = tokio::task::spawn_blocking(move || match before_in {
        Some(root) => checkpoints.before_turn(&turn_id, &root),
        None => checkpoints.after_turn(&turn_id),
    })
    .await;
    match done {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!("workspace checkpoint failed: {err}"),
        Err(err) => tracing::warn!("workspace checkpoint task failed: {err}"),
    }
}

fn user_message_event(input: &[InputItem]) -> UserMessageEvent {
    let mut message = String::new();
    let mut images = Vec::new();
    for item in input {
        match item {
            InputItem::Text { text } => message.push_str(text),
            InputItem::Image { image_url } => images.push(image_url.clone()),
            InputItem::LocalImage { path } => images.push(path.display().to_string()),
        }
    }
    UserMessageEvent { message, images }
}

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
    loop {
        session.drain_pending_input().await;
        // Before a new turn's first request, or after a tool round: compact when the last
        // response filled the context up to the limit.
        let mut compacted = auto_compact_if_full(session, &ids, cancel).await?;
        let (items, registry) = loop {
            let context = session.turn_context();
            let registry =
                tools::registry_for(&context, mcp_tools.as_deref(), session.embedder_tools());
            let mut prompt = build_prompt(&context, session.history(), registry.specs().to_vec());
            prompt.conversation_id = Some(session.id().to_string());
            prompt.output_schema = ids.output_schema.clone();
            if session.is_reviewing() {
                prompt.instructions = crate::review::REVIEW_INSTRUCTIONS.to_string();
            }
            super::hook_points::fire(
                session,
                &ids,
                &context,
                crate::hooks::HookEvent::PreModelRequest,
                None,
                serde_json::json!({}),
            )
            .await;
            let sampled = sample_with_retries(session, &ids, &prompt, cancel).await;
            super::hook_points::fire(
                session,
                &ids,
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
                Ok(items) => break (items, registry),
                Err(TurnStop::Failed(err)) if err.is_context_overflow() => {
                    if compacted {
                        return Err(TurnStop::Failed(CoreError::ContextWindowExceeded(
                            err.to_string(),
                        )));
                    }
                    tracing::info!(conversation = %session.id(), "{err}; compacting and retrying");
                    compact(session, &ids, cancel, None, "auto").await?;
                    compacted = true;
                }
                Err(stop) => return Err(stop),
            }
        };
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
        for call in calls {
            let Some(call_id) = call.tool_call_id() else {
                continue;
            };
            let ctx = ToolContext {
                host: host.clone(),
                turn: context.clone(),
                ids: ids.clone(),
                cancel: cancel.clone(),
                call_id: keel_protocol::CallId::new(call_id),
                diff: diff.clone(),
            };
            let registry = &registry;
            let items = super::hook_points::around_tool_call(
                session,
                &ids,
                &context,
                &call,
                |call| async move { registry.dispatch(ctx, &call).await },
            )
            .await?;
            session.record_items(&items).await;
            stop_if_unrecorded(session)?;
        }
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
async fn auto_compact_if_full(
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

/// Every tool call in history gets an output, so the next request is valid after an abort.
async fn close_dangling_calls(session: &Session) {
    let missing =
        outputs_for_unanswered_calls(&session.history(), "aborted: the user interrupted the turn");
    session.record_items(&missing).await;
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
        let err = match sample_once(session, ids, prompt, cancel).await {
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
) -> Result<Vec<ResponseItem>, TurnStop> {
    let context = session.turn_context();
    let mut stream = tokio::select! {
        () = cancel.cancelled() => return Err(TurnStop::Interrupted),
        stream = context.client.stream(prompt) => stream.map_err(TurnStop::Failed)?,
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
            Some(Err(err)) => return Err(TurnStop::Failed(err)),
            None => {
                return Err(TurnStop::Failed(CoreError::Stream(
                    "stream closed before response.completed".to_string(),
                )));
            }
        };
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
                announce_completed_items(session, ids, &items).await;
                let info = match token_usage {
                    Some(usage) => {
                        super::goal_turns::account_response(session, ids, &usage).await;
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
