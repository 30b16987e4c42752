//! `turn/*` methods.

use keel_protocol::app_server::{
    EmptyResponse, ThreadIdParams, Turn, TurnInterruptParams, TurnStartParams, TurnStartResponse,
    TurnSteerParams, TurnSteerResponse,
};
use keel_protocol::{InputItem, Op, Submission, SubmissionId};

use super::Reply;
pub(crate) use super::loaded::{Claim, loaded};
use super::settings_change::SettingsRequest;
use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// `turn/start`: answers with the new turn, then hands the input to the engine so
/// `turn/started` always follows the response.
/// A `localImage` input must name an absolute path to a file that exists, so a typo is an
/// error for the client, not a note to the model.
fn check_local_images(input: &[keel_protocol::app_server::UserInput], method: &str) -> Result<()> {
    for item in input {
        if let keel_protocol::app_server::UserInput::LocalImage { path } = item {
            let problem = if !path.is_absolute() {
                Some("is not an absolute path".to_string())
            } else {
                match std::fs::metadata(path) {
                    Ok(meta) if meta.is_file() => None,
                    Ok(_) => Some("is not a file".to_string()),
                    Err(err) => Some(err.to_string()),
                }
            };
            if let Some(problem) = problem {
                return Err(AppServerError::InvalidParams {
                    method: method.into(),
                    message: format!("localImage `{}`: {problem}", path.display()),
                });
            }
        }
    }
    Ok(())
}

pub(crate) async fn start(state: &AppState, params: TurnStartParams) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    if params.input.is_empty() {
        return Err(AppServerError::InvalidParams {
            method: "turn/start".into(),
            message: "`input` must not be empty".into(),
        });
    }
    check_local_images(&params.input, "turn/start")?;
    // Checked before the turn is claimed or any setting changes: a bad profile must not leave
    // the thread claimed.
    let checked = SettingsRequest {
        method: "turn/start",
        sandbox_policy: params.sandbox_policy.clone(),
        permissions: params.permissions.as_deref(),
        cwd: params.cwd.clone(),
        environments: params.environments.as_deref(),
        approval_policy: params.approval_policy,
        collaboration_mode: params.collaboration_mode.clone(),
        model: params.model.clone(),
        effort: params.effort,
        within_ceiling: true,
        mode_defaults: false,
    }
    .check(state, &thread)?;
    let turn_id = uuid::Uuid::now_v7().to_string();
    thread.claim_turn(&turn_id).map_err(|running| {
        AppServerError::InvalidRequest(format!(
            "turn {running} is still running; use turn/steer to add input or turn/interrupt to stop it"
        ))
    })?;
    // Held until the input is queued, so the claim is released if the connection's task is
    // aborted first (it would otherwise block every later turn on the thread).
    let claim = Claim::new(thread.clone(), turn_id.clone());
    let applied = checked.apply(state, &thread)?;
    if applied.changed {
        thread.broadcast_settings(applied.settings).await;
    }
    let (overrides, mode) = (applied.overrides, applied.mode_op);
    let output_schema = params
        .output_schema
        .map(|schema| Op::NextTurnOutputSchema { schema });
    let items: Vec<InputItem> = params.input.into_iter().map(Into::into).collect();
    // The client's span, when it sent one, is the turn span's parent.
    let trace = crate::client_trace::traceparent()
        .map(|traceparent| Op::NextTurnTraceContext { traceparent });
    let response = TurnStartResponse {
        turn: Turn::in_progress(turn_id.clone(), None),
    };
    let conversation = thread.conversation.clone();
    Reply::then(&response, async move {
        let mut claim = claim;
        let submit = async {
            for op in [overrides, mode, output_schema, trace]
                .into_iter()
                .flatten()
            {
                conversation.submit(op).await?;
            }
            conversation
                .submit_with_id(Submission {
                    id: SubmissionId::new(turn_id),
                    op: Op::UserInput { items },
                })
                .await
        };
        match submit.await {
            Ok(_) => claim.submitted(),
            Err(err) => tracing::warn!("turn could not be submitted: {err}"),
        }
    })
}

/// `thread/compact/start`: answers `{}`, then runs a compaction as a turn of its own
/// (`turn/started`, a `contextCompaction` item, `thread/compacted`, `turn/completed`).
pub(crate) async fn compact(state: &AppState, params: ThreadIdParams) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    let turn_id = uuid::Uuid::now_v7().to_string();
    thread.claim_turn(&turn_id).map_err(|running| {
        AppServerError::InvalidRequest(format!(
            "turn {running} is still running; compact after it ends or interrupt it"
        ))
    })?;
    let claim = Claim::new(thread.clone(), turn_id.clone());
    let conversation = thread.conversation.clone();
    Reply::then(&EmptyResponse::default(), async move {
        let mut claim = claim;
        let submitted = conversation
            .submit_with_id(Submission {
                id: SubmissionId::new(turn_id),
                op: Op::Compact { instructions: None },
            })
            .await;
        match submitted {
            Ok(_) => claim.submitted(),
            Err(err) => tracing::warn!("compaction could not be submitted: {err}"),
        }
    })
}

/// `turn/steer`: adds input to the running turn.
pub(crate) async fn steer(state: &AppState, params: TurnSteerParams) -> Result<TurnSteerResponse> {
    let thread = loaded(state, &params.thread_id).await?;
    if thread.is_reviewing() {
        return Err(AppServerError::InvalidRequest(
            "a review is running and takes no input; wait for it to end or interrupt it".into(),
        ));
    }
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

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadCompactStart, |ctx, p| compact(ctx.state, p).await);
handle!(TurnStart, |ctx, p| start(ctx.state, p).await);
handle!(TurnSteer, |ctx, p| Reply::now(&steer(ctx.state, p).await?));
handle!(TurnInterrupt, |ctx, p| Reply::now(
    &interrupt(ctx.state, p).await?
));

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use keel_protocol::app_server::{ThreadStartParams, TurnStartParams, UserInput};
    use keel_test_support::write_config;
    use pretty_assertions::assert_eq;

    use crate::outgoing::Outgoing;
    use crate::state::{AppState, ServerConfig};

    /// A `turn/start` whose connection goes away after the answer is built but before the
    /// input reaches the engine (its task is aborted) must not leave the thread claimed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_turn_start_releases_its_claim() -> anyhow::Result<()> {
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        write_config(
            home.path(),
            "http://127.0.0.1:9",
            Vec::<(&str, toml::Value)>::new(),
        )?;
        let state = AppState::new(ServerConfig {
            keel_home: home.path().to_path_buf(),
            cli_overrides: Vec::new(),
            cwd: workspace.path().to_path_buf(),
            session_source: keel_protocol::app_server::SessionSource::Vscode,
            deliver_queued_messages: true,
            client_backends: Default::default(),
            threads: Default::default(),
        });
        let queue = Arc::new(crate::delivery::DeliveryQueue::new(16));
        let outgoing = Arc::new(Outgoing::new(queue));
        let params = ThreadStartParams {
            ephemeral: Some(true),
            ..ThreadStartParams::default()
        };
        super::super::threads::start(&state, params, &outgoing).await?;
        let thread_id = state
            .threads
            .lock()
            .await
            .keys()
            .next()
            .copied()
            .ok_or_else(|| anyhow::anyhow!("no thread loaded"))?;
        let thread = state
            .loaded(thread_id)
            .await
            .ok_or_else(|| anyhow::anyhow!("thread not loaded"))?;

        let reply = super::start(
            &state,
            TurnStartParams {
                thread_id: thread_id.to_string(),
                input: vec![UserInput::Text {
                    text: "hi".into(),
                    text_elements: Vec::new(),
                }],
                ..TurnStartParams::default()
            },
        )
        .await?;
        assert!(thread.active_turn_id().is_some());
        // The connection closed: its request task is aborted before `after` runs.
        drop(reply);
        assert_eq!(thread.active_turn_id(), None);
        state.unload(thread_id).await;
        Ok(())
    }
}
