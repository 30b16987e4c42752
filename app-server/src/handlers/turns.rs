//! `turn/*` methods.

use std::sync::Arc;

use keel_protocol::app_server::{
    EmptyResponse, Turn, TurnInterruptParams, TurnStartParams, TurnStartResponse, TurnStatus,
    TurnSteerParams, TurnSteerResponse,
};
use keel_protocol::{InputItem, Op, Submission, SubmissionId};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};
use crate::threads::LoadedThread;

async fn loaded(state: &AppState, thread_id: &str) -> Result<Arc<LoadedThread>> {
    let id = parse_thread_id(thread_id)?;
    state.loaded(id).await.ok_or_else(|| {
        AppServerError::InvalidRequest(format!(
            "thread {id} is not loaded; call thread/start or thread/resume first"
        ))
    })
}

/// `turn/start`: answers with the new turn, then hands the input to the engine so
/// `turn/started` always follows the response.
pub(crate) async fn start(state: &AppState, params: TurnStartParams) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    if params.input.is_empty() {
        return Err(AppServerError::InvalidParams {
            method: "turn/start".into(),
            message: "`input` must not be empty".into(),
        });
    }
    let turn_id = uuid::Uuid::now_v7().to_string();
    thread.claim_turn(&turn_id).map_err(|running| {
        AppServerError::InvalidRequest(format!(
            "turn {running} is still running; use turn/steer to add input or turn/interrupt to stop it"
        ))
    })?;
    let overrides = (params.cwd.is_some()
        || params.approval_policy.is_some()
        || params.sandbox_policy.is_some()
        || params.model.is_some()
        || params.effort.is_some())
    .then(|| Op::OverrideTurnContext {
        cwd: params.cwd.clone(),
        approval_policy: params.approval_policy,
        sandbox_policy: params.sandbox_policy.clone().map(Into::into),
        model: params.model.clone(),
        effort: params.effort,
    });
    let items: Vec<InputItem> = params.input.into_iter().map(Into::into).collect();
    let turn_id_for_release = turn_id.clone();
    let response = TurnStartResponse {
        turn: Turn {
            id: turn_id.clone(),
            items: Vec::new(),
            status: TurnStatus::InProgress,
            error: None,
        },
    };
    let conversation = thread.conversation.clone();
    let claim = thread.clone();
    Reply::then(&response, async move {
        let submit = async {
            if let Some(op) = overrides {
                conversation.submit(op).await?;
            }
            conversation
                .submit_with_id(Submission {
                    id: SubmissionId::new(turn_id),
                    op: Op::UserInput { items },
                })
                .await
        };
        if let Err(err) = submit.await {
            tracing::warn!("turn could not be submitted: {err}");
            claim.release_claim(&turn_id_for_release);
        }
    })
}

/// `turn/steer`: adds input to the running turn.
pub(crate) async fn steer(state: &AppState, params: TurnSteerParams) -> Result<TurnSteerResponse> {
    let thread = loaded(state, &params.thread_id).await?;
    match thread.active_turn_id() {
        Some(running) if running == params.expected_turn_id => {
            let items: Vec<InputItem> = params.input.iter().cloned().map(Into::into).collect();
            thread.conversation.submit(Op::UserInput { items }).await?;
            thread.steered(params.input).await;
            Ok(TurnSteerResponse { turn_id: running })
        }
        Some(running) => Err(AppServerError::InvalidRequest(format!(
            "expected turn {} but turn {running} is running",
            params.expected_turn_id
        ))),
        None => Err(AppServerError::InvalidRequest(format!(
            "no turn is running (expected {})",
            params.expected_turn_id
        ))),
    }
}

/// `turn/interrupt`.
pub(crate) async fn interrupt(
    state: &AppState,
    params: TurnInterruptParams,
) -> Result<EmptyResponse> {
    let thread = loaded(state, &params.thread_id).await?;
    match thread.active_turn_id() {
        Some(running) if running == params.turn_id => {
            thread.conversation.submit(Op::Interrupt).await?;
            Ok(EmptyResponse {})
        }
        _ => Err(AppServerError::InvalidRequest(format!(
            "turn {} is not running",
            params.turn_id
        ))),
    }
}
