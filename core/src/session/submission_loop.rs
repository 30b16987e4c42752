//! The loop that reads a conversation's submissions and acts on each at once.

use std::sync::Arc;

use keel_protocol::{EventMsg, InputItem, Op, Submission, SubmissionId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::turn::{TurnTask, run_turn};
use super::{ActiveTurn, Session};
use crate::models::{ContentItem, ResponseItem};
use crate::turn_context::TurnContext;

/// Runs until `Op::Shutdown` or until every submission sender is dropped; then stops the
/// running turn (killing its commands) and returns.
pub(crate) async fn submission_loop(session: Arc<Session>, mut rx: mpsc::Receiver<Submission>) {
    while let Some(Submission { id, op }) = rx.recv().await {
        match op {
            Op::UserInput { items } => start_or_join_turn(&session, id, items),
            Op::Compact { instructions } => {
                start_alone(&session, id, TurnTask::Compact(instructions), "compact").await;
            }
            Op::Review { review_request } => {
                let task = TurnTask::Review(review_request);
                start_alone(&session, id, task, "start a review").await;
            }
            Op::GoalChanged { origin } => {
                super::goal_turns::goal_changed(&session, id, origin).await
            }
            Op::ContinueGoal => super::goal_turns::continue_goal(&session, id),
            Op::InjectItems { items } => inject_items(&session, items).await,
            Op::SetCollaborationMode {
                mode,
                developer_instructions,
            } => {
                let mut context: TurnContext = (*session.turn_context()).clone();
                match (mode, context.plan_mode.take()) {
                    (keel_protocol::CollaborationModeKind::Plan, current) => {
                        let sandbox_after = match current {
                            Some(plan) => plan.sandbox_after,
                            None => context.sandbox_policy.clone(),
                        };
                        context.sandbox_policy = keel_protocol::SandboxPolicy::ReadOnly;
                        context.plan_mode = Some(crate::turn_context::PlanMode {
                            instructions: developer_instructions,
                            sandbox_after,
                        });
                    }
                    (keel_protocol::CollaborationModeKind::Default, Some(plan)) => {
                        context.sandbox_policy = plan.sandbox_after;
                    }
                    (keel_protocol::CollaborationModeKind::Default, None) => {}
                }
                session.set_turn_context(context);
            }
            Op::RunUserShellCommand {
                command,
                timeout_ms,
            } => super::user_shell::start(&session, id, command, timeout_ms),
            Op::UserTurn {
                items,
                cwd,
                approval_policy,
                sandbox_policy,
                model,
                effort,
            } => {
                let mut context = (*session.turn_context()).clone();
                context.cwd = cwd;
                context.approval_policy = approval_policy;
                match context.plan_mode.as_mut() {
                    Some(plan) => plan.sandbox_after = sandbox_policy,
                    None => context.sandbox_policy = sandbox_policy,
                }
                context.client = context.client.with_model(model, effort);
                session.set_turn_context(context);
                start_or_join_turn(&session, id, items);
            }
            Op::OverrideTurnContext {
                cwd,
                approval_policy,
                sandbox_policy,
                model,
                effort,
            } => {
                let mut context: TurnContext = (*session.turn_context()).clone();
                if let Some(cwd) = cwd {
                    context.cwd = cwd;
                }
                if let Some(policy) = approval_policy {
                    context.approval_policy = policy;
                }
                if let Some(policy) = sandbox_policy {
                    // In plan mode the new sandbox applies once the mode ends.
                    match context.plan_mode.as_mut() {
                        Some(plan) => plan.sandbox_after = policy,
                        None => context.sandbox_policy = policy,
                    }
                }
                if model.is_some() || effort.is_some() {
                    let model = model.unwrap_or_else(|| context.client.settings().model.clone());
                    let effort = effort.or(context.client.settings().reasoning_effort);
                    context.client = context.client.with_model(model, effort);
                }
                session.set_turn_context(context);
            }
            Op::Interrupt => interrupt(&session),
            Op::ExecApproval {
                id: call_id,
                decision,
            }
            | Op::PatchApproval {
                id: call_id,
                decision,
            } => {
                session.resolve_approval(&call_id, decision);
            }
            Op::UserInputAnswer {
                id: call_id,
                response,
            } => {
                session.resolve_user_input(&call_id, response);
            }
            Op::DynamicToolResponse {
                id: call_id,
                response,
            } => session.resolve_dynamic_call(&call_id, response),
            Op::NextTurnOutputSchema { schema } => session.set_next_output_schema(schema),
            #[cfg(feature = "mcp")]
            Op::ResolveElicitation {
                server_name,
                request_id,
                decision,
                content,
            } => {
                let action = match decision {
                    keel_protocol::ElicitationAction::Accept => {
                        rmcp::model::ElicitationAction::Accept
                    }
                    keel_protocol::ElicitationAction::Decline => {
                        rmcp::model::ElicitationAction::Decline
                    }
                    keel_protocol::ElicitationAction::Cancel => {
                        rmcp::model::ElicitationAction::Cancel
                    }
                };
                let mut result = rmcp::model::ElicitResult::new(action);
                result.content =
                    content.filter(|_| decision == keel_protocol::ElicitationAction::Accept);
                session.resolve_elicitation(&server_name, &request_id, result);
            }
            #[cfg(not(feature = "mcp"))]
            Op::ResolveElicitation { server_name, .. } => {
                tracing::warn!(
                    server_name,
                    "an elicitation answer, but this build has no MCP client"
                );
            }
            Op::ThreadRollback { num_turns } => rollback(&session, &id, num_turns).await,
            Op::CloseBackgroundTerminals { process_id } => {
                // On a task of its own: a session busy in a call is killed once the call lets
                // go of it, and other submissions are not held up meanwhile.
                let session = session.clone();
                tokio::spawn(async move {
                    let ids = crate::turn_context::TurnIds {
                        turn_id: keel_protocol::TurnId::new(id.as_str()),
                        sub_id: id.clone(),
                        output_schema: None,
                    };
                    crate::tools::close_sessions(session.as_ref(), &ids, process_id.as_deref())
                        .await;
                });
            }
            Op::Shutdown => {
                stop_turn(&session).await;
                session.agents().close_all().await;
                let ids = crate::turn_context::TurnIds {
                    turn_id: keel_protocol::TurnId::new(id.as_str()),
                    sub_id: id.clone(),
                    output_schema: None,
                };
                super::hook_points::session_end(&session, &ids).await;
                crate::tools::close_all_sessions(session.as_ref(), &ids).await;
                session.send_event(&id, EventMsg::ShutdownComplete).await;
                return;
            }
            other => {
                let message = format!("operation not supported: {other:?}");
                session
                    .send_event(
                        &id,
                        EventMsg::Error(keel_protocol::ErrorEvent::new(message)),
                    )
                    .await;
            }
        }
    }
    stop_turn(&session).await;
    // Every client let go of the conversation: the session ends.
    let ids = crate::turn_context::TurnIds {
        turn_id: keel_protocol::TurnId::new("session-end"),
        sub_id: SubmissionId::new("session-end"),
        output_schema: None,
    };
    super::hook_points::session_end(&session, &ids).await;
}

/// Converts user input to a history item.
pub(crate) fn user_input_item(cwd: &std::path::Path, items: &[InputItem]) -> ResponseItem {
    let content = items
        .iter()
        .map(|item| match item {
            InputItem::Text { text } => ContentItem::InputText { text: text.clone() },
            InputItem::Image { image_url } => ContentItem::InputImage {
                image_url: image_url.clone(),
            },
            // Read when the input arrives; a file that cannot be sent is named to the model
            // in its place (clients check paths before they submit).
            InputItem::LocalImage { path } => {
                match crate::images::local_image_data_url(cwd, path) {
                    Ok(image_url) => ContentItem::InputImage { image_url },
                    Err(err) => ContentItem::InputText {
                        text: format!("[image not attached: {err}]"),
                    },
                }
            }
        })
        .collect();
    ResponseItem::Message {
        id: None,
        role: "user".to_string(),
        content,
    }
}

fn start_or_join_turn(session: &Arc<Session>, sub_id: SubmissionId, items: Vec<InputItem>) {
    {
        let mut state = session.state();
        if state.active_turn.is_some() && state.review_parent_history.is_some() {
            // A reviewer works alone: input meant for the conversation waits for the next turn.
            drop(state);
            let session = session.clone();
            tokio::spawn(async move {
                let message =
                    "a review is running; send this after it ends, or interrupt it".to_string();
                session
                    .send_event(
                        &sub_id,
                        EventMsg::Warning(keel_protocol::WarningEvent { message }),
                    )
                    .await;
            });
            return;
        }
        if state.active_turn.is_some() {
            // Input while a turn runs joins that turn: it is sent with the next model request.
            let cwd = state.turn_context.cwd.clone();
            state.pending_input.push(user_input_item(&cwd, &items));
            return;
        }
    }
    start_turn(session, sub_id, TurnTask::UserInput(items));
}

/// A turn that must run alone (a compaction, a review): refused, with `doing` named in the
/// error, while another turn runs.
async fn start_alone(session: &Arc<Session>, sub_id: SubmissionId, task: TurnTask, doing: &str) {
    if session.state().active_turn.is_some() {
        let message =
            format!("cannot {doing} while a turn is running; interrupt it or wait for it to end");
        session
            .send_event(
                &sub_id,
                EventMsg::Error(keel_protocol::ErrorEvent::new(message)),
            )
            .await;
        return;
    }
    start_turn(session, sub_id, task);
}

/// `Op::InjectItems`: items a client checked (`keel_core::injectable_item`) join the history:
/// with the running turn's next request, or before the next turn.
async fn inject_items(session: &Arc<Session>, items: Vec<serde_json::Value>) {
    let items: Vec<ResponseItem> = items
        .into_iter()
        .filter_map(|value| match crate::models::injectable_item(value) {
            Ok(item) => Some(item),
            Err(err) => {
                tracing::warn!(conversation = %session.id(), "injected item dropped: {err}");
                None
            }
        })
        .collect();
    let running = session.state().active_turn.is_some();
    if running {
        for item in items {
            session.queue_input(item);
        }
    } else {
        session.record_items(&items).await;
    }
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

/// Drops the latest turns from history; refused while a turn runs.
async fn rollback(session: &Session, sub_id: &SubmissionId, num_turns: u32) {
    let refused = {
        let mut state = session.state();
        if state.active_turn.is_some() {
            true
        } else {
            let mut no_events = Vec::new();
            crate::rollout::drop_last_turns(&mut state.history, &mut no_events, num_turns);
            false
        }
    };
    let msg = if refused {
        EventMsg::Error(keel_protocol::ErrorEvent::new(
            "cannot roll back while a turn is running; interrupt it first",
        ))
    } else {
        session
            .persist(&[crate::rollout::RolloutItem::Rollback(num_turns)])
            .await;
        EventMsg::ThreadRolledBack(keel_protocol::ThreadRolledBackEvent { num_turns })
    };
    session.send_event(sub_id, msg).await;
}

fn interrupt(session: &Session) {
    if let Some(turn) = &session.state().active_turn {
        turn.cancel.cancel();
    }
}

/// Interrupts the running turn and waits for it to wind down.
async fn stop_turn(session: &Session) {
    let handle = {
        let mut state = session.state();
        if let Some(turn) = &state.active_turn {
            turn.cancel.cancel();
        }
        state.last_turn.take()
    };
    if let Some(handle) = handle
        && let Err(err) = handle.await
    {
        tracing::warn!("turn task failed while stopping: {err}");
    }
}
