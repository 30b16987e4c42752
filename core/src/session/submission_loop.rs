//! The loop that reads a conversation's submissions and acts on each at once: a table from
//! each operation to the named function in [`super::ops`] that carries it out.

use std::ops::ControlFlow;
use std::sync::Arc;

use keel_protocol::{EventMsg, Op, Submission, SubmissionId};
use tokio::sync::mpsc;

use super::Session;
use super::ops::settings::{TurnOverrides, UserTurnSettings};
use super::ops::{answers, lifecycle, settings, turns};
use super::task::TurnTask;

/// Runs until `Op::Shutdown` or until every submission sender is dropped; then stops the
/// running turn (killing its commands) and returns.
pub(crate) async fn submission_loop(session: Arc<Session>, mut rx: mpsc::Receiver<Submission>) {
    while let Some(Submission { id, op }) = rx.recv().await {
        if handle(&session, id, op).await.is_break() {
            return;
        }
    }
    lifecycle::abandoned(&session).await;
}

/// Carries out one operation; `Break` once the conversation has shut down.
async fn handle(session: &Arc<Session>, id: SubmissionId, op: Op) -> ControlFlow<()> {
    match op {
        Op::UserInput { items } => turns::start_or_join_turn(session, id, items),
        Op::UserTurn {
            items,
            cwd,
            approval_policy,
            sandbox_policy,
            model,
            effort,
        } => {
            let settings = UserTurnSettings {
                cwd,
                approval_policy,
                sandbox_policy,
                model,
                effort,
            };
            settings::apply_user_turn(session, settings);
            turns::start_or_join_turn(session, id, items);
        }
        Op::Compact { instructions } => {
            let task = TurnTask::Compact(instructions);
            turns::start_alone(session, id, task, "compact").await;
        }
        Op::Review { review_request } => {
            let task = TurnTask::Review(review_request);
            turns::start_alone(session, id, task, "start a review").await;
        }
        Op::RunUserShellCommand {
            command,
            timeout_ms,
        } => turns::run_user_shell_command(session, id, command, timeout_ms),
        Op::GoalChanged { origin } => turns::goal_changed(session, id, origin).await,
        Op::ContinueGoal => super::task::continue_goal(session, id),
        Op::InjectItems { items } => turns::inject_items(session, items).await,
        Op::SetCollaborationMode {
            mode,
            developer_instructions,
        } => settings::set_collaboration_mode(session, mode, developer_instructions),
        Op::OverrideTurnContext {
            cwd,
            approval_policy,
            sandbox_policy,
            model,
            effort,
        } => {
            let overrides = TurnOverrides {
                cwd,
                approval_policy,
                sandbox_policy,
                model,
                effort,
            };
            settings::override_turn_context(session, overrides);
        }
        Op::NextTurnOutputSchema { schema } => session.set_next_output_schema(schema),
        Op::NextTurnTraceContext { traceparent } => session.set_turn_traceparent(traceparent),
        Op::ExecApproval {
            id: call_id,
            decision,
        }
        | Op::PatchApproval {
            id: call_id,
            decision,
        } => answers::approval(session, &call_id, decision),
        Op::UserInputAnswer {
            id: call_id,
            response,
        } => answers::user_input(session, &call_id, response),
        Op::DynamicToolResponse {
            id: call_id,
            response,
        } => answers::dynamic_tool(session, &call_id, response),
        Op::ResolveElicitation {
            server_name,
            request_id,
            decision,
            content,
        } => answers::elicitation(session, &server_name, &request_id, decision, content),
        Op::Interrupt => lifecycle::interrupt(session),
        Op::ThreadRollback { num_turns } => lifecycle::rollback(session, &id, num_turns).await,
        Op::CloseBackgroundTerminals { process_id } => {
            lifecycle::close_background_terminals(session, id, process_id);
        }
        Op::Shutdown => {
            lifecycle::shutdown(session, &id).await;
            return ControlFlow::Break(());
        }
        // `Op` is non-exhaustive: an operation this engine does not know is answered with an
        // error naming it, never dropped.
        other => {
            tracing::warn!(conversation = %session.id(), "unsupported operation: {other:?}");
            let message = format!("operation not supported: {other:?}");
            session
                .send_event(
                    &id,
                    EventMsg::Error(keel_protocol::ErrorEvent::new(message)),
                )
                .await;
        }
    }
    ControlFlow::Continue(())
}
