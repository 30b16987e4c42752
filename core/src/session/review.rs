//! A review turn: the reviewer works on a fresh history under its own instructions, and the
//! conversation keeps only the request and the rendered verdict.

use std::sync::Arc;

use keel_protocol::{
    AgentMessageEvent, EventMsg, ExitedReviewModeEvent, ReviewOutput, ReviewRequest,
};
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::error::CoreError;
use crate::models::ResponseItem;
use crate::review::{history_items, parse_review_output, render_review, resolve_review};
use crate::turn_context::{TurnIds, TurnStop};

/// Runs the review `request` as the body of a turn; returns the rendered verdict.
pub(super) async fn run_review(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    request: ReviewRequest,
) -> Result<Option<String>, TurnStop> {
    let cwd = session.turn_context().cwd.clone();
    let resolved = resolve_review(&cwd, &request)
        .await
        .map_err(|err| TurnStop::Failed(CoreError::Review(err)))?;
    let entered = ReviewRequest {
        target: request.target,
        user_facing_hint: Some(resolved.label.clone()),
    };
    session
        .send_event(&ids.sub_id, EventMsg::EnteredReviewMode(entered))
        .await;
    session.begin_review();
    session
        .record_items(&[ResponseItem::user_text(resolved.prompt)])
        .await;
    let outcome = super::sampling::turn_loop(session, ids, cancel).await;
    session.end_review();
    match outcome {
        Ok(answer) => {
            let answer = answer.unwrap_or_default();
            // Not the JSON asked for: the reviewer's words are still the review.
            let output = parse_review_output(&answer).unwrap_or_else(|| ReviewOutput {
                findings: Vec::new(),
                overall_correctness: String::new(),
                overall_explanation: answer.trim().to_string(),
                overall_confidence_score: 0.0,
            });
            let rendered = render_review(&output);
            session
                .record_items(&history_items(&resolved.label, &rendered))
                .await;
            session
                .send_event(
                    &ids.sub_id,
                    EventMsg::ExitedReviewMode(ExitedReviewModeEvent {
                        review_output: Some(output),
                    }),
                )
                .await;
            session
                .send_event(
                    &ids.sub_id,
                    EventMsg::AgentMessage(AgentMessageEvent {
                        message: rendered.clone(),
                    }),
                )
                .await;
            Ok(Some(rendered))
        }
        Err(stop) => {
            session
                .send_event(
                    &ids.sub_id,
                    EventMsg::ExitedReviewMode(ExitedReviewModeEvent {
                        review_output: None,
                    }),
                )
                .await;
            Err(stop)
        }
    }
}
