//! `thread/list` and `thread/search`: answered by the server's thread catalog (the thread
//! index, one query whatever the number of rollouts, or the rollouts read one by one when the
//! index cannot be used).

use keel_core::{ListCursor, ThreadCatalogError, ThreadFilter, ThreadSearch};
use keel_protocol::app_server::{
    ThreadListParams, ThreadListResponse, ThreadSearchParams, ThreadSearchResponse,
    ThreadSearchResult, ThreadSortKey,
};

use super::thread_status::statuses;
use super::threads::summary_thread;
use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

/// `thread/list`: threads that had a turn and pass every filter of the request, in the order
/// asked for (newest created first by default), paged by a cursor.
pub(crate) async fn list(state: &AppState, params: ThreadListParams) -> Result<ThreadListResponse> {
    let Some(mut filter) = super::thread_list_filter::filter_of(&params)? else {
        // Threads attached to a thread: Keel has none.
        return Ok(ThreadListResponse {
            data: Vec::new(),
            next_cursor: None,
            backwards_cursor: None,
            read_states: Default::default(),
        });
    };
    let section_order = restrict_to_section(state, &params, &mut filter).await?;
    let mut page = state
        .catalog
        .list(filter.clone())
        .await
        .map_err(|err| catalog_error("thread/list", err))?;
    if let Some(order) = &section_order {
        // Section order within the page (a section's threads fit one page in practice).
        page.items.sort_by_key(|summary| {
            order
                .iter()
                .position(|id| *id == summary.id)
                .unwrap_or(usize::MAX)
        });
    }
    let backwards_cursor = page
        .items
        .first()
        .map(|first| ListCursor::at(first, filter.sort).encode());
    let statuses = statuses(state, page.items.iter().map(|summary| summary.id).collect()).await;
    let mut data = Vec::with_capacity(page.items.len());
    for (summary, status) in page.items.iter().zip(statuses) {
        let mut thread = summary_thread(summary, status, Vec::new());
        state.decorate(&mut thread).await;
        data.push(thread);
    }
    let mut read_states = std::collections::BTreeMap::new();
    for thread in &data {
        if let Ok(id) = parse_thread_id(&thread.id) {
            read_states.insert(thread.id.clone(), state.read_states.get(id).await);
        }
    }
    Ok(ThreadListResponse {
        data,
        next_cursor: page.next_cursor,
        backwards_cursor,
        read_states,
    })
}

/// Narrows `filter` to a section's threads (`sectionId` an id) or to the unsectioned ones
/// (`sectionId` `null`); returns the section's order when the request sorts by it.
async fn restrict_to_section(
    state: &AppState,
    params: &ThreadListParams,
    filter: &mut ThreadFilter,
) -> Result<Option<Vec<keel_protocol::ConversationId>>> {
    let Some(section) = params.section_id.clone() else {
        return Ok(None);
    };
    let unsectioned = section.is_none();
    let members = state
        .organize(move |organizer| organizer.members(section.as_deref()))
        .await?;
    if unsectioned {
        filter.excluded.extend(members);
        return Ok(None);
    }
    filter.included = Some(match filter.included.take() {
        Some(asked) => asked
            .into_iter()
            .filter(|id| members.contains(id))
            .collect(),
        None => members.clone(),
    });
    Ok((params.sort_key == Some(ThreadSortKey::SectionPosition)).then_some(members))
}

/// `thread/search`: threads with a turn whose user or assistant messages, or name, contain
/// the term (case-insensitive), newest first; each with a snippet of its first match.
pub(crate) async fn search(
    state: &AppState,
    params: ThreadSearchParams,
) -> Result<ThreadSearchResponse> {
    let term = params.search_term.trim().to_lowercase();
    if term.is_empty() {
        return Err(AppServerError::InvalidParams {
            method: "thread/search".into(),
            message: "`searchTerm` must not be empty".into(),
        });
    }
    let limit = params.limit.unwrap_or(25).clamp(1, 200) as usize;
    let archived = params.archived.unwrap_or(false);
    let page = state
        .catalog
        .search(ThreadSearch {
            term,
            archived,
            cursor: params.cursor.clone(),
            limit,
        })
        .await
        .map_err(|err| catalog_error("thread/search", err))?;
    let (hits, next_cursor) = (page.items, page.next_cursor);
    let statuses = statuses(state, hits.iter().map(|hit| hit.summary.id).collect()).await;
    let data = hits
        .into_iter()
        .zip(statuses)
        .map(|(hit, status)| ThreadSearchResult {
            thread: summary_thread(&hit.summary, status, Vec::new()),
            snippet: hit.snippet,
        })
        .collect();
    Ok(ThreadSearchResponse {
        data,
        next_cursor,
        backwards_cursor: None,
    })
}

/// A catalog failure as the method's error: an unknown cursor is the client's mistake.
fn catalog_error(method: &str, err: ThreadCatalogError) -> AppServerError {
    match err {
        ThreadCatalogError::UnknownCursor(_) => AppServerError::InvalidParams {
            method: method.into(),
            message: err.to_string(),
        },
        ThreadCatalogError::Read(err) => err.into(),
    }
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadList, |ctx, p| Reply::now(&list(ctx.state, p).await?));
handle!(ThreadSearch, |ctx, p| Reply::now(
    &search(ctx.state, p).await?
));
