//! The owner of every turn's lifecycle, whatever the turn does: it starts the turn after the
//! previous one (with a guard that frees the conversation if the turn panics), moves the
//! conversation to a new environment, checkpoints the workspace around it, says it started,
//! runs its body, and says how it ended (completed, aborted or failed), leading on to the
//! goal's next turn. The bodies (the user's input, a review, a goal's next step, the user's
//! command, a compaction) call sampling ([`super::sampling`]) and know nothing of this.

use std::sync::Arc;
use std::time::Duration;

use keel_protocol::{
    ErrorEvent, EventMsg, InputItem, SubmissionId, TaskCompleteEvent, TaskStartedEvent,
    TurnAbortReason, TurnAbortedEvent,
};
use tokio_util::sync::CancellationToken;

use super::compact::compact;
use super::sampling::turn_loop;
use super::{ActiveTurn, Session};
use crate::models::outputs_for_unanswered_calls;
use crate::turn_context::{TurnContext, TurnIds, TurnStop};

/// What a turn does.
pub(super) enum TurnTask {
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

/// Starts `task` as the conversation's running turn, after the previous turn's task.
pub(super) fn start_turn(session: &Arc<Session>, sub_id: SubmissionId, task: TurnTask) {
    let mut state = session.state();
    let cancel = CancellationToken::new();
    state.active_turn = Some(ActiveTurn {
        sub_id: sub_id.clone(),
        cancel: cancel.clone(),
    });
    let previous = state.last_turn.take();
    let task_session = session.clone();
    state.last_turn = Some(tokio::spawn(async move {
        if let Some(previous) = previous
            && let Err(err) = previous.await
        {
            tracing::warn!("previous turn task failed: {err}");
        }
        let turn = std::panic::AssertUnwindSafe(run_turn(
            task_session.clone(),
            sub_id.clone(),
            task,
            cancel,
        ));
        if futures::FutureExt::catch_unwind(turn).await.is_err() {
            // A bug in a turn must not wedge the conversation: free it and say what happened.
            tracing::error!(conversation = %task_session.id(), "turn {sub_id} panicked");
            task_session.clear_active_turn(&sub_id);
            let message =
                "internal error: the turn stopped unexpectedly; the conversation remains usable"
                    .to_string();
            task_session
                .send_event(
                    &sub_id,
                    EventMsg::Error(keel_protocol::ErrorEvent::new(message)),
                )
                .await;
        }
    }));
}

/// Runs a whole turn and reports how it ended. Never returns an error: failures become
/// `error` / `turn_aborted` events and the conversation stays usable.
async fn run_turn(
    session: Arc<Session>,
    sub_id: SubmissionId,
    task: TurnTask,
    cancel: CancellationToken,
) {
    let output_schema = match &task {
        TurnTask::UserInput(_) => session.take_next_output_schema(),
        TurnTask::Review(_) => Some(crate::review::review_output_schema()),
        TurnTask::Compact(_) | TurnTask::GoalContinuation | TurnTask::UserShell { .. } => None,
    };
    // Only the turns that work for the user lead on to the goal's next turn.
    let leads_on = matches!(task, TurnTask::UserInput(_) | TurnTask::GoalContinuation);
    let mut ids = TurnIds::starting(sub_id, output_schema);
    let starting = session.turn_context();
    ids.trace = starting.telemetry.turn(
        ids.turn_id.as_str(),
        &starting.model,
        session.take_turn_traceparent().as_deref(),
    );
    if let TurnTask::UserInput(input) = &task {
        ids.trace.user_prompt(input);
    }
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
    let outcome = run_body(&session, &ids, &cancel, task, context).await;
    match &outcome {
        Ok(_) => ids.trace.finish("completed", None),
        Err(TurnStop::Interrupted) => ids.trace.finish("interrupted", None),
        Err(TurnStop::Failed(err)) => ids.trace.finish("failed", Some(&err.to_string())),
    }
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
                continue_goal(&session, ids.sub_id.clone());
            }
        }
        Err(stop) => stopped(&session, &ids, &clock, stop).await,
    }
}

/// The turn's own work; `Ok` with the last message the model wrote.
async fn run_body(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    task: TurnTask,
    context: Arc<TurnContext>,
) -> Result<Option<String>, TurnStop> {
    match task {
        TurnTask::UserInput(input) => {
            super::user_turn::answer(session, ids, cancel, context, input).await
        }
        TurnTask::Review(request) => super::review::run_review(session, ids, cancel, request).await,
        TurnTask::UserShell { command, timeout } => {
            let note = super::user_shell::run(session, ids, cancel, &command, timeout).await?;
            session.record_items(&[note]).await;
            session.clear_active_turn(&ids.sub_id);
            Ok(None)
        }
        TurnTask::GoalContinuation => match session.goals().get() {
            // Cleared or stopped since the turn was asked for: nothing to do.
            Some(goal) if goal.status == keel_protocol::ThreadGoalStatus::Active => {
                session
                    .record_items(&[crate::goals::continuation_message(&goal)])
                    .await;
                turn_loop(session, ids, cancel).await
            }
            _ => {
                session.clear_active_turn(&ids.sub_id);
                Ok(None)
            }
        },
        TurnTask::Compact(instructions) => {
            compact(session, ids, cancel, instructions.as_deref(), "manual").await?;
            session.clear_active_turn(&ids.sub_id);
            Ok(None)
        }
    }
}

/// A turn that did not complete: its calls get outputs, an interrupt stops what the model
/// started, an active goal stops on a failure, and the client hears how it ended.
async fn stopped(session: &Arc<Session>, ids: &TurnIds, clock: &TurnClock, stop: TurnStop) {
    session.clear_active_turn(&ids.sub_id);
    close_dangling_calls(session).await;
    if matches!(stop, TurnStop::Interrupted) {
        // An interrupt stops everything the model started, long-lived processes too.
        crate::tools::close_all_sessions(session.as_ref(), ids).await;
        super::hook_points::fire(
            session,
            ids,
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
        let usage_limit =
            error.codex_error_info == Some(keel_protocol::CodexErrorInfo::UsageLimitExceeded);
        super::goal_accounting::turn_failed(session, ids, usage_limit).await;
    }
    session.send_event(&ids.sub_id, msg).await;
}

/// Starts a turn toward the goal when it is active and no turn runs.
pub(super) fn continue_goal(session: &Arc<Session>, sub_id: SubmissionId) {
    if !session.goals().is_active() || session.state().active_turn.is_some() {
        return;
    }
    // A turn id of its own: the submission that changed the goal is not this turn.
    let turn_sub = SubmissionId::new(format!("goal-{}", uuid::Uuid::now_v7()));
    tracing::debug!(conversation = %session.id(), after = %sub_id, "goal turn {turn_sub}");
    start_turn(session, turn_sub, TurnTask::GoalContinuation);
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

/// Every tool call in history gets an output, so the next request is valid after an abort.
async fn close_dangling_calls(session: &Session) {
    let missing =
        outputs_for_unanswered_calls(&session.history(), "aborted: the user interrupted the turn");
    session.record_items(&missing).await;
}
