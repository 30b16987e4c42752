//! `thread/attachment*`: what a thread owns, kept in the thread organizer;
//! `thread/attachment/updated` tells the caller and the thread's followers of each change.

use std::sync::Arc;

use keel_core::ThreadOrganizerError;
use keel_protocol::ConversationId;
use keel_protocol::app_server::{
    EmptyResponse, ServerNotification, ThreadAttachmentAddOutcome, ThreadAttachmentAddParams,
    ThreadAttachmentAddResponse, ThreadAttachmentListParams, ThreadAttachmentListResponse,
    ThreadAttachmentOperation, ThreadAttachmentOwner, ThreadAttachmentOwnerListParams,
    ThreadAttachmentOwnerListResponse, ThreadAttachmentRemoveParams,
    ThreadAttachmentUpdatedNotification,
};
use serde::Serialize;

use super::Reply;
use crate::error::Result;
use crate::outgoing::Outgoing;
use crate::state::{AppState, parse_thread_id};
use crate::threads::LoadedThread;

/// Page size when a request gives none.
const DEFAULT_LIMIT: u32 = 100;

/// Largest page.
const MAX_LIMIT: u32 = 500;

/// A result, then `notification` to the thread's followers and to the caller (once, if it
/// follows the thread too).
pub(super) fn then_tell<T: Serialize>(
    value: &T,
    loaded: Option<Arc<LoadedThread>>,
    outgoing: &Arc<Outgoing>,
    notification: ServerNotification,
) -> Result<Reply> {
    let outgoing = outgoing.clone();
    Reply::then(value, async move {
        match loaded {
            Some(thread) => {
                let caller_follows = thread
                    .subscribers()
                    .iter()
                    .any(|follower| follower.id() == outgoing.id());
                if !caller_follows {
                    outgoing.notify(notification.clone()).await;
                }
                thread.broadcast(notification).await;
            }
            None => outgoing.notify(notification).await,
        }
    })
}

/// The thread, which must exist (live or archived, loaded or not).
async fn owner(
    state: &AppState,
    thread_id: &str,
) -> Result<(ConversationId, Option<Arc<LoadedThread>>)> {
    let id = parse_thread_id(thread_id)?;
    match super::threads::existing_thread(state, id).await {
        Ok((loaded, _)) => Ok((id, loaded)),
        Err(_) => Err(ThreadOrganizerError::ThreadNotFound(id.to_string()).into()),
    }
}

async fn add(
    state: &AppState,
    params: ThreadAttachmentAddParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let (id, loaded) = owner(state, &params.thread_id).await?;
    let (kind, key) = (params.attachment_type, params.identity_key);
    let (outcome, attachment) = state
        .organize(move |organizer| organizer.add_attachment(id, &kind, &key, params.payload))
        .await?;
    let response = ThreadAttachmentAddResponse {
        outcome,
        attachment: attachment.clone(),
    };
    if outcome == ThreadAttachmentAddOutcome::Existing {
        return Reply::now(&response);
    }
    let notification = updated(
        id,
        attachment.attachment_type,
        attachment.identity_key,
        attachment.id,
        ThreadAttachmentOperation::Created,
    );
    then_tell(&response, loaded, outgoing, notification)
}

async fn remove(
    state: &AppState,
    params: ThreadAttachmentRemoveParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let (id, loaded) = owner(state, &params.thread_id).await?;
    let (kind, key) = (params.attachment_type.clone(), params.identity_key.clone());
    let removed = state
        .organize(move |organizer| organizer.remove_attachment(id, &kind, &key))
        .await?;
    match removed {
        Some(attachment_id) => {
            let notification = updated(
                id,
                params.attachment_type,
                params.identity_key,
                attachment_id,
                ThreadAttachmentOperation::Deleted,
            );
            then_tell(&EmptyResponse {}, loaded, outgoing, notification)
        }
        // Already gone: nothing changed, nobody is told.
        None => Reply::now(&EmptyResponse {}),
    }
}

fn updated(
    thread: ConversationId,
    attachment_type: String,
    identity_key: String,
    attachment_id: String,
    operation: ThreadAttachmentOperation,
) -> ServerNotification {
    ServerNotification::ThreadAttachmentUpdated(ThreadAttachmentUpdatedNotification {
        thread_id: thread.to_string(),
        attachment_type,
        identity_key,
        attachment_id,
        operation,
    })
}

/// `thread/attachment/list`: no existence check (an unknown thread owns nothing).
async fn list(
    state: &AppState,
    params: ThreadAttachmentListParams,
) -> Result<ThreadAttachmentListResponse> {
    let id = parse_thread_id(&params.thread_id)?;
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let page = state
        .organize(move |organizer| organizer.attachments(id, params.cursor.as_deref(), limit))
        .await?;
    Ok(ThreadAttachmentListResponse {
        data: page.items,
        next_cursor: page.next_cursor,
    })
}

/// `thread/attachmentOwner/list`: the threads owning an attachment, with whether each is
/// archived (filtered by `archived` when given); a page ends at `limit` and the next starts
/// after the thread the cursor names.
async fn owners(
    state: &AppState,
    params: ThreadAttachmentOwnerListParams,
) -> Result<ThreadAttachmentOwnerListResponse> {
    let (kind, key) = (params.attachment_type, params.identity_key);
    let threads = state
        .organize(move |organizer| organizer.attachment_owners(&kind, &key))
        .await?;
    let mut owners = Vec::with_capacity(threads.len());
    for id in threads {
        let archived = state.loaded(id).await.is_none()
            && state.catalog.find(id, false).await?.is_none()
            && state.catalog.find(id, true).await?.is_some();
        if params.archived.is_none_or(|wanted| wanted == archived) {
            owners.push(ThreadAttachmentOwner {
                thread_id: id.to_string(),
                archived,
            });
        }
    }
    let start = match &params.cursor {
        None => 0,
        Some(cursor) => match owners.iter().position(|owner| &owner.thread_id == cursor) {
            Some(at) => at + 1,
            None => return Err(ThreadOrganizerError::InvalidCursor.into()),
        },
    };
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    let more = owners.len() > start + limit;
    let data: Vec<_> = owners.into_iter().skip(start).take(limit).collect();
    let next_cursor = more
        .then(|| data.last().map(|last| last.thread_id.clone()))
        .flatten();
    Ok(ThreadAttachmentOwnerListResponse { data, next_cursor })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadAttachmentAdd, |ctx, p| add(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ThreadAttachmentRemove, |ctx, p| remove(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ThreadAttachmentList, |ctx, p| Reply::now(
    &list(ctx.state, p).await?
));
handle!(ThreadAttachmentOwnerList, |ctx, p| Reply::now(
    &owners(ctx.state, p).await?
));
