//! `thread/queue/*`: messages kept for a thread, in the home's queue store, and delivered as
//! its next turns when it is idle (by the thread's queue runner, `threads/queue_runner.rs`).
//! Answers and errors follow Codex 0.171's.

use std::sync::Arc;

use keel_core::{QueuedMessage, ThreadQueue, ThreadQueueError};
use keel_protocol::ConversationId;
use keel_protocol::app_server::{
    EmptyResponse, QueuedSubmission, ThreadQueueAddParams, ThreadQueueDeleteParams,
    ThreadQueueDeleteResponse, ThreadQueueListParams, ThreadQueueListResponse,
    ThreadQueueReorderParams, ThreadQueueStartParams, ThreadQueueStartResponse,
    ThreadQueueSubmissionResponse, ThreadQueueUpdateParams, Turn,
};

use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

/// Page size of `thread/queue/list` when the request gives none.
const DEFAULT_LIMIT: u32 = 25;

/// `thread/queue/add`: appends a message; an idle loaded thread starts it at once.
pub(crate) async fn add(
    state: &AppState,
    params: ThreadQueueAddParams,
) -> Result<ThreadQueueSubmissionResponse> {
    let id = recorded(state, &params.thread_id).await?;
    if params.input.is_empty() {
        return Err(AppServerError::InvalidParams {
            method: "thread/queue/add".into(),
            message: "`input` must not be empty".into(),
        });
    }
    let ThreadQueueAddParams {
        client_user_message_id,
        input,
        responsesapi_client_metadata,
        ..
    } = params;
    let message = on_queue(state, move |queue| {
        queue.add(
            id,
            &client_user_message_id,
            input,
            responsesapi_client_metadata,
        )
    })
    .await?;
    state.queue_changed(id).await;
    Ok(ThreadQueueSubmissionResponse {
        queued_submission: submission(message),
    })
}

/// `thread/queue/list`: the messages in delivery order, a page at a time.
pub(crate) async fn list(
    state: &AppState,
    params: ThreadQueueListParams,
) -> Result<ThreadQueueListResponse> {
    let id = recorded(state, &params.thread_id).await?;
    let offset = match &params.cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| AppServerError::InvalidRequest(format!("invalid cursor: {cursor}")))?,
    };
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT).max(1) as usize;
    let mut found = on_queue(state, move |queue| queue.list(id, offset, limit + 1)).await?;
    let next_cursor = (found.len() > limit).then(|| {
        found.truncate(limit);
        (offset + limit).to_string()
    });
    Ok(ThreadQueueListResponse {
        data: found.into_iter().map(submission).collect(),
        next_cursor,
    })
}

/// `thread/queue/delete`: `deleted: false` when there was no such message.
pub(crate) async fn delete(
    state: &AppState,
    params: ThreadQueueDeleteParams,
) -> Result<ThreadQueueDeleteResponse> {
    let id = recorded(state, &params.thread_id).await?;
    let message = params.queued_submission_id;
    let deleted = on_queue(state, move |queue| queue.delete(id, &message)).await?;
    if deleted {
        state.queue_changed(id).await;
    }
    Ok(ThreadQueueDeleteResponse { deleted })
}

/// `thread/queue/reorder`: every queued message, in the new order.
pub(crate) async fn reorder(
    state: &AppState,
    params: ThreadQueueReorderParams,
) -> Result<EmptyResponse> {
    let id = recorded(state, &params.thread_id).await?;
    let ids = params.queued_submission_ids;
    on_queue(state, move |queue| queue.reorder(id, &ids)).await?;
    state.queue_changed(id).await;
    Ok(EmptyResponse::default())
}

/// `thread/queue/update`: a message's new input (and metadata, when given).
pub(crate) async fn update(
    state: &AppState,
    params: ThreadQueueUpdateParams,
) -> Result<ThreadQueueSubmissionResponse> {
    let id = recorded(state, &params.thread_id).await?;
    let ThreadQueueUpdateParams {
        queued_submission_id,
        input,
        responsesapi_client_metadata,
        ..
    } = params;
    if input.is_empty() {
        return Err(AppServerError::InvalidParams {
            method: "thread/queue/update".into(),
            message: "`input` must not be empty".into(),
        });
    }
    let wanted = queued_submission_id.clone();
    let updated = on_queue(state, move |queue| {
        queue.update(id, &wanted, input, responsesapi_client_metadata)
    })
    .await?
    .ok_or_else(|| not_queued(&queued_submission_id))?;
    state.queue_changed(id).await;
    Ok(ThreadQueueSubmissionResponse {
        queued_submission: submission(updated),
    })
}

/// `thread/queue/start`: runs a queued message (the first, unless one is named) now, on a
/// loaded idle thread.
pub(crate) async fn start(
    state: &AppState,
    params: ThreadQueueStartParams,
) -> Result<ThreadQueueStartResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    let thread = state.loaded(id).await.ok_or_else(|| {
        AppServerError::InvalidRequest("resume the thread before starting a queued message".into())
    })?;
    let turn_id = uuid::Uuid::now_v7().to_string();
    thread.claim_turn(&turn_id).map_err(|running| {
        AppServerError::InvalidRequest(format!(
            "turn {running} is still running; the queue continues when it ends"
        ))
    })?;
    let wanted = params.queued_submission_id.clone();
    let taken = on_queue(state, move |queue| queue.take(id, wanted.as_deref())).await;
    let message = match taken {
        Ok(Some(message)) => message,
        Ok(None) => {
            thread.release_claim(&turn_id);
            return Err(match &params.queued_submission_id {
                Some(wanted) => not_queued(wanted),
                None => AppServerError::InvalidRequest("queue is empty".into()),
            });
        }
        Err(err) => {
            thread.release_claim(&turn_id);
            return Err(err);
        }
    };
    state.queue_changed(id).await;
    crate::threads::queue_runner::submit_claimed_turn(&thread, &turn_id, message.input).await?;
    Ok(ThreadQueueStartResponse {
        turn: Turn::in_progress(turn_id, None),
    })
}

/// The thread `thread_id` names, which must be loaded or recorded.
async fn recorded(state: &AppState, thread_id: &str) -> Result<ConversationId> {
    let id = parse_thread_id(thread_id)?;
    if state.loaded(id).await.is_some() || state.catalog.find(id, false).await?.is_some() {
        return Ok(id);
    }
    Err(AppServerError::InvalidRequest(format!(
        "no thread with id {id}"
    )))
}

/// Runs `work` on the home's queue store, off the async threads.
async fn on_queue<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&ThreadQueue) -> std::result::Result<T, ThreadQueueError> + Send + 'static,
) -> Result<T> {
    let queue: Arc<ThreadQueue> = state.thread_queue().await?;
    tokio::task::spawn_blocking(move || work(&queue))
        .await
        .map_err(|err| AppServerError::Internal(format!("thread queue: {err}")))?
        .map_err(|err| match err {
            ThreadQueueError::NotAPermutation => AppServerError::InvalidRequest(err.to_string()),
            other => AppServerError::Internal(other.to_string()),
        })
}

fn not_queued(id: &str) -> AppServerError {
    AppServerError::InvalidRequest(format!("queued submission not found: {id}"))
}

fn submission(message: QueuedMessage) -> QueuedSubmission {
    QueuedSubmission {
        id: message.id,
        input: message.input,
        client_user_message_id: message.client_user_message_id,
        responsesapi_client_metadata: message.metadata,
    }
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadQueueAdd, |ctx, p| Reply::now(
    &add(ctx.state, p).await?
));
handle!(ThreadQueueList, |ctx, p| Reply::now(
    &list(ctx.state, p).await?
));
handle!(ThreadQueueDelete, |ctx, p| Reply::now(
    &delete(ctx.state, p).await?
));
handle!(ThreadQueueReorder, |ctx, p| Reply::now(
    &reorder(ctx.state, p).await?
));
handle!(ThreadQueueUpdate, |ctx, p| Reply::now(
    &update(ctx.state, p).await?
));
handle!(ThreadQueueStart, |ctx, p| Reply::now(
    &start(ctx.state, p).await?
));
