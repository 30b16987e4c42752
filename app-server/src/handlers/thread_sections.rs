//! `threadSection/*` and `thread/section/move`: sections kept in the thread organizer, and
//! `thread/section/changed` to the caller and the thread's followers after a move.

use std::sync::Arc;

use keel_core::ThreadOrganizerError;
use keel_protocol::app_server::{
    EmptyResponse, ServerNotification, ThreadSectionChangedNotification, ThreadSectionListParams,
    ThreadSectionListResponse, ThreadSectionMoveParams, ThreadSectionResponse,
};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::{AppState, parse_thread_id};

/// `threadSection/list`: Pinned first, then the others in creation order; a page ends at
/// `limit` (at least one) and the next starts after the section named by the cursor (an
/// unknown cursor gives an empty page).
async fn list(
    state: &AppState,
    params: ThreadSectionListParams,
) -> Result<ThreadSectionListResponse> {
    let sections = state.organize(|organizer| organizer.sections()).await?;
    let start = match &params.cursor {
        None => 0,
        Some(cursor) => match sections.iter().position(|section| &section.id == cursor) {
            Some(at) => at + 1,
            None => sections.len(),
        },
    };
    let limit = params
        .limit
        .map_or(usize::MAX, |limit| limit.max(1) as usize);
    let data: Vec<_> = sections.into_iter().skip(start).take(limit).collect();
    let next_cursor = (params.limit.is_some() && data.len() == limit)
        .then(|| data.last().map(|last| last.id.clone()))
        .flatten();
    Ok(ThreadSectionListResponse { data, next_cursor })
}

/// `thread/section/move`: the thread must exist (live or archived, loaded or not), the
/// section too; `beforeThreadId` must already be in it.
async fn move_thread(
    state: &AppState,
    params: ThreadSectionMoveParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let id = parse_thread_id(&params.thread_id)?;
    let before = params
        .before_thread_id
        .as_deref()
        .map(parse_thread_id)
        .transpose()?;
    let (loaded, _) = super::threads::existing_thread(state, id).await?;
    let section = params.section_id.clone();
    state
        .organize(move |organizer| organizer.move_thread(id, section.as_deref(), before))
        .await
        .map_err(|err| match err {
            // Codex answers a bad move as an invalid request.
            AppServerError::Organizer(ThreadOrganizerError::SectionNotFound(section)) => {
                AppServerError::InvalidRequest(format!("section {section} does not exist"))
            }
            AppServerError::Organizer(err @ ThreadOrganizerError::BeforeNotInSection { .. }) => {
                AppServerError::InvalidRequest(err.to_string())
            }
            other => other,
        })?;
    let notification = ServerNotification::ThreadSectionChanged(ThreadSectionChangedNotification {
        thread_id: id.to_string(),
        section_id: params.section_id,
    });
    super::thread_attachments::then_tell(&EmptyResponse {}, loaded, outgoing, notification)
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadSectionList, |ctx, p| Reply::now(
    &list(ctx.state, p).await?
));
handle!(ThreadSectionCreate, |ctx, p| {
    let section = ctx
        .state
        .organize(move |organizer| organizer.create_section(&p.name, p.appearance))
        .await?;
    Reply::now(&ThreadSectionResponse { section })
});
handle!(ThreadSectionUpdate, |ctx, p| {
    let section = ctx
        .state
        .organize(move |organizer| organizer.update_section(&p.section_id, &p.name, p.appearance))
        .await?;
    Reply::now(&ThreadSectionResponse { section })
});
handle!(ThreadSectionDelete, |ctx, p| {
    ctx.state
        .organize(move |organizer| organizer.delete_section(&p.section_id))
        .await?;
    Reply::now(&EmptyResponse {})
});
handle!(ThreadSectionMove, |ctx, p| move_thread(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
