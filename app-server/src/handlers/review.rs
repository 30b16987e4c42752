//! `review/start`.

use keel_protocol::app_server::{ReviewStartParams, ReviewStartResponse, Turn};
use keel_protocol::{Op, ReviewRequest, Submission, SubmissionId};

use super::Reply;
use super::turns::{Claim, loaded};
use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// `review/start`: checks the target against the thread's repository (a missing branch or
/// commit is the client's error), answers with the review's turn, then starts it.
pub(crate) async fn start(state: &AppState, params: ReviewStartParams) -> Result<Reply> {
    let thread = loaded(state, &params.thread_id).await?;
    let request = ReviewRequest {
        target: params.target.into(),
        user_facing_hint: None,
    };
    let cwd = thread.settings().cwd;
    keel_core::review::resolve_review(&cwd, &request)
        .await
        .map_err(|err| AppServerError::InvalidParams {
            method: "review/start".into(),
            message: err.to_string(),
        })?;
    let turn_id = uuid::Uuid::now_v7().to_string();
    thread.claim_turn(&turn_id).map_err(|running| {
        AppServerError::InvalidRequest(format!(
            "turn {running} is still running; review after it ends or interrupt it"
        ))
    })?;
    let claim = Claim::new(thread.clone(), turn_id.clone());
    let response = ReviewStartResponse {
        turn: Turn::in_progress(turn_id.clone(), None),
        review_thread_id: params.thread_id,
    };
    let conversation = thread.conversation.clone();
    Reply::then(&response, async move {
        let mut claim = claim;
        let submitted = conversation
            .submit_with_id(Submission {
                id: SubmissionId::new(turn_id),
                op: Op::Review {
                    review_request: request,
                },
            })
            .await;
        match submitted {
            Ok(_) => claim.submitted(),
            Err(err) => tracing::warn!("review could not be submitted: {err}"),
        }
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ReviewStart, |ctx, p| start(ctx.state, p).await);
