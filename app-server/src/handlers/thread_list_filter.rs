//! `thread/list`'s params checked and turned into the engine's [`ThreadFilter`], with Codex
//! 0.171's defaults (interactive threads only, newest created first) and its answers to what
//! a local server cannot filter on.

use keel_core::{ListCursor, ListSort, ThreadFilter};
use keel_protocol::ConversationId;
use keel_protocol::app_server::{SortDirection, ThreadListParams, ThreadSortKey, ThreadSourceKind};

use crate::error::{AppServerError, Result};

/// Page size when the request gives none.
const DEFAULT_LIMIT: u32 = 25;

/// Largest page.
const MAX_LIMIT: u32 = 200;

/// Most ids `includedThreadIds` and `excludedThreadIds` each take.
const MAX_IDS: usize = 100;

/// The filter `params` ask for, sections aside; `None` when they name a thread to be attached
/// to, which no Keel thread is (so nothing matches).
pub(super) fn filter_of(params: &ThreadListParams) -> Result<Option<ThreadFilter>> {
    if params
        .originators
        .as_ref()
        .is_some_and(|list| !list.is_empty())
    {
        return Err(invalid_params(
            "originator filtering is not supported by the local app-server",
        ));
    }
    if let Some(project) = &params.project_id {
        return Err(invalid_params(&format!("project not found: {project}")));
    }
    if params.parent_thread_id.is_some() && params.ancestor_thread_id.is_some() {
        return Err(invalid_request(
            "parentThreadId and ancestorThreadId are mutually exclusive",
        ));
    }
    if params.attached_to_thread_id.is_some()
        && (params.parent_thread_id.is_some() || params.ancestor_thread_id.is_some())
    {
        return Err(invalid_request(
            "attachedToThreadId cannot be combined with parentThreadId or ancestorThreadId",
        ));
    }
    let sort_key = params.sort_key.unwrap_or(ThreadSortKey::CreatedAt);
    if sort_key == ThreadSortKey::SectionPosition && params.section_id.is_none() {
        return Err(invalid_request(
            "section-position sorting requires a section filter",
        ));
    }
    let included = ids(params.included_thread_ids.as_deref(), "included")?;
    let excluded = ids(params.excluded_thread_ids.as_deref(), "excluded")?.unwrap_or_default();
    let parent = thread_id(params.parent_thread_id.as_deref(), "parent")?;
    let ancestor = thread_id(params.ancestor_thread_id.as_deref(), "ancestor")?;
    let sort = match sort_key {
        ThreadSortKey::CreatedAt | ThreadSortKey::SectionPosition => ListSort::Created,
        ThreadSortKey::UpdatedAt | ThreadSortKey::RecencyAt => ListSort::Updated,
    };
    let cursor = params
        .cursor
        .as_deref()
        .map(|cursor| ListCursor::decode(cursor, sort))
        .transpose()
        .map_err(|err| AppServerError::InvalidRequest(err.to_string()))?;
    // Threads are never attached to other threads in Keel (attachments are records, not
    // threads); sections are applied by the caller, which reads the organizer.
    if params.attached_to_thread_id.is_some() {
        return Ok(None);
    }
    // Asked for a thread's agents, every kind is listed unless the request says otherwise.
    let source_kinds = match params.source_kinds.as_deref() {
        None | Some([]) if parent.is_some() || ancestor.is_some() => Vec::new(),
        None | Some([]) => ThreadSourceKind::INTERACTIVE.to_vec(),
        Some(kinds) => kinds.to_vec(),
    };
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
    Ok(Some(ThreadFilter {
        archived: params.archived.unwrap_or(false),
        limit,
        cursor,
        sort,
        ascending: params.sort_direction == Some(SortDirection::Asc),
        cwds: params.cwd.as_ref().map(|cwd| cwd.paths()),
        text: params.search_term.clone(),
        source_kinds,
        model_providers: params.model_providers.clone().unwrap_or_default(),
        included,
        excluded,
        parent,
        ancestor,
    }))
}

/// `includedThreadIds` or `excludedThreadIds`, checked: at most 100 valid ids.
fn ids(list: Option<&[String]>, which: &str) -> Result<Option<Vec<ConversationId>>> {
    let Some(list) = list else {
        return Ok(None);
    };
    if list.len() > MAX_IDS {
        return Err(invalid_params(&format!(
            "{which}ThreadIds accepts at most {MAX_IDS} entries"
        )));
    }
    list.iter()
        .map(|id| {
            id.parse()
                .map_err(|err| invalid_params(&format!("invalid {which} thread id: {err}")))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// `parentThreadId` or `ancestorThreadId`, checked.
fn thread_id(id: Option<&str>, which: &str) -> Result<Option<ConversationId>> {
    id.map(|id| {
        id.parse()
            .map_err(|err| invalid_request(&format!("invalid {which} thread id: {err}")))
    })
    .transpose()
}

fn invalid_params(message: &str) -> AppServerError {
    AppServerError::InvalidParams {
        method: "thread/list".into(),
        message: message.into(),
    }
}

fn invalid_request(message: &str) -> AppServerError {
    AppServerError::InvalidRequest(message.into())
}
