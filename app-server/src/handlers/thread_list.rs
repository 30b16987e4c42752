//! `thread/list` and `thread/search`: answered from the thread index (one query, whatever
//! the number of rollouts), or — if the index cannot be used — by reading the rollouts one
//! by one, as before it existed.

use std::sync::Arc;

use keel_core::{
    ARCHIVED_SESSIONS_DIR, ConversationSummary, ConversationsPage, ListCursor, SESSIONS_DIR,
    ThreadFilter, ThreadIndex, list_conversations_in,
};
use keel_protocol::app_server::{
    ThreadListParams, ThreadListResponse, ThreadSearchParams, ThreadSearchResponse,
    ThreadSearchResult, ThreadSortKey, ThreadStatus,
};

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
    let indexed = match state.thread_index().await {
        Some(index) => {
            let filter = filter.clone();
            on_index(index, move |index| index.list(&filter)).await
        }
        None => None,
    };
    let page = match indexed {
        Some(page) => page,
        None => scan_list(state, &filter).await?,
    };
    let mut page = page;
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
    let mut data = Vec::with_capacity(page.items.len());
    for summary in &page.items {
        let mut thread = summary_thread(summary, status(state, summary).await, Vec::new());
        state.decorate(&mut thread).await;
        data.push(thread);
    }
    let read_states = data
        .iter()
        .filter_map(|thread| {
            let id = parse_thread_id(&thread.id).ok()?;
            Some((thread.id.clone(), state.read_states.get(id)))
        })
        .collect();
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
    let index = state.thread_index().await;
    // The index pages by its own positions, the scan by file names: a cursor from the other
    // (the index became unusable between two pages) is refused rather than misread.
    if let Some(cursor) = &params.cursor
        && cursor.parse::<i64>().is_ok() != index.is_some()
    {
        return Err(AppServerError::InvalidParams {
            method: "thread/search".into(),
            message: format!(
                "`cursor` {cursor:?} is not a cursor this server returned; search again without one"
            ),
        });
    }
    let indexed = match index {
        Some(index) => {
            let (term, cursor) = (term.clone(), params.cursor.clone());
            on_index(index, move |index| {
                index.search(&term, archived, cursor.as_deref(), limit)
            })
            .await
            .map(|page| {
                let hits = page
                    .items
                    .into_iter()
                    .map(|hit| (hit.summary, hit.snippet))
                    .collect();
                (hits, page.next_cursor)
            })
        }
        None => None,
    };
    let (hits, next_cursor) = match indexed {
        Some(found) => found,
        None => scan_search(state, &term, archived, params.cursor.clone(), limit).await?,
    };
    let mut data = Vec::with_capacity(hits.len());
    for (summary, snippet) in hits {
        data.push(ThreadSearchResult {
            thread: summary_thread(&summary, status(state, &summary).await, Vec::new()),
            snippet,
        });
    }
    Ok(ThreadSearchResponse {
        data,
        next_cursor,
        backwards_cursor: None,
    })
}

/// Runs a query on the index off the async threads; `None` (logged) when it fails, so the
/// caller falls back to reading the rollouts.
async fn on_index<T: Send + 'static>(
    index: Arc<ThreadIndex>,
    query: impl FnOnce(&ThreadIndex) -> Result<T, keel_core::ThreadIndexError> + Send + 'static,
) -> Option<T> {
    match tokio::task::spawn_blocking(move || query(&index)).await {
        Ok(Ok(found)) => Some(found),
        Ok(Err(err)) => {
            tracing::warn!("thread index unavailable, reading the rollouts instead: {err}");
            None
        }
        Err(err) => {
            tracing::warn!("thread index query stopped: {err}");
            None
        }
    }
}

async fn status(state: &AppState, summary: &ConversationSummary) -> ThreadStatus {
    match state.loaded(summary.id).await {
        Some(thread) => thread.status(),
        None => ThreadStatus::NotLoaded,
    }
}

fn root_dir(state: &AppState, archived: bool) -> std::path::PathBuf {
    state.keel_home().join(if archived {
        ARCHIVED_SESSIONS_DIR
    } else {
        SESSIONS_DIR
    })
}

/// `thread/list` without the index: reads every rollout's head, then filters and pages as
/// the index would.
async fn scan_list(state: &AppState, filter: &ThreadFilter) -> Result<ConversationsPage> {
    let root = root_dir(state, filter.archived);
    let mut all: Vec<ConversationSummary> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = list_conversations_in(&root, 100, cursor.as_deref()).await?;
        all.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(filter.page(all)),
        }
    }
}

/// `thread/search` without the index: reads the rollouts one by one, stopping at each
/// file's first match. Its cursor is a file name, as `thread/list`'s.
async fn scan_search(
    state: &AppState,
    term: &str,
    archived: bool,
    cursor: Option<String>,
    limit: usize,
) -> Result<(Vec<(ConversationSummary, String)>, Option<String>)> {
    let root = root_dir(state, archived);
    let mut found: Vec<(ConversationSummary, String)> = Vec::new();
    let mut cursor = cursor;
    loop {
        let page = list_conversations_in(&root, 100, cursor.as_deref()).await?;
        for summary in page.items {
            if found.len() == limit {
                let next = file_name(found.last().map(|(s, _)| s));
                return Ok((found, next));
            }
            if !summary.has_turns {
                continue;
            }
            let path = summary.path.clone();
            let needle = term.to_string();
            let matched =
                tokio::task::spawn_blocking(move || keel_core::first_message_match(&path, &needle))
                    .await
                    .map_err(|err| AppServerError::Internal(format!("searching: {err}")))?;
            let snippet = matched.or_else(|| {
                summary
                    .name
                    .as_ref()
                    .filter(|name| name.to_lowercase().contains(term))
                    .cloned()
            });
            if let Some(snippet) = snippet {
                found.push((summary, snippet));
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((found, None)),
        }
    }
}

fn file_name(summary: Option<&ConversationSummary>) -> Option<String> {
    summary
        .and_then(|s| s.path.file_name())
        .map(|n| n.to_string_lossy().into_owned())
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadList, |ctx, p| Reply::now(&list(ctx.state, p).await?));
handle!(ThreadSearch, |ctx, p| Reply::now(
    &search(ctx.state, p).await?
));
