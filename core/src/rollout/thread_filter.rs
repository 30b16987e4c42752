//! Which recorded threads a listing shows, in what order, from where: one description that the
//! thread index turns into SQL and that [`ThreadFilter::page`] applies to summaries read from
//! the rollouts (when there is no index), so both answer alike.

use std::collections::HashMap;
use std::path::PathBuf;

use keel_protocol::ConversationId;
use keel_protocol::app_server::ThreadSourceKind;

use super::summary::{ConversationSummary, ConversationsPage};

/// What a listing orders by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListSort {
    /// Creation (the rollout file's name, which starts with its creation time).
    #[default]
    Created,
    /// The last change (the timestamp of the rollout's last line).
    Updated,
}

/// Filters, order and page of a thread listing.
#[derive(Debug, Clone, Default)]
pub struct ThreadFilter {
    /// The archive instead of the live threads.
    pub archived: bool,
    /// Page size.
    pub limit: usize,
    /// Where the previous page ended.
    pub cursor: Option<ListCursor>,
    /// What to order by.
    pub sort: ListSort,
    /// Oldest first instead of newest first.
    pub ascending: bool,
    /// Only threads started in one of these directories.
    pub cwds: Option<Vec<PathBuf>>,
    /// Only threads whose preview or name contains this (ASCII case-insensitive).
    pub text: Option<String>,
    /// Only threads of these kinds; empty: every kind.
    pub source_kinds: Vec<ThreadSourceKind>,
    /// Only threads recorded with one of these providers; empty: every provider.
    pub model_providers: Vec<String>,
    /// Only these threads.
    pub included: Option<Vec<ConversationId>>,
    /// Never these threads.
    pub excluded: Vec<ConversationId>,
    /// Only threads this one spawned directly.
    pub parent: Option<ConversationId>,
    /// Only threads spawned from this one, at any depth.
    pub ancestor: Option<ConversationId>,
}

/// A position in a listing: the thread a page ended at (exclusive), or, for a page read the
/// other way back, started at (inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    /// The rollout file name of that thread.
    pub file_name: String,
    /// Its last change, when the listing orders by it.
    pub updated_at: Option<String>,
    /// Whether that thread itself is on the next page.
    pub inclusive: bool,
}

/// A cursor this listing did not hand out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor: {0}")]
pub struct InvalidCursor(pub String);

impl ListCursor {
    /// The cursor after `summary` in a listing sorted by `sort`.
    pub fn after(summary: &ConversationSummary, sort: ListSort) -> Self {
        Self {
            file_name: file_name(summary),
            updated_at: (sort == ListSort::Updated).then(|| summary.updated_at.clone()),
            inclusive: false,
        }
    }

    /// The cursor that, read the other way, starts at `summary`.
    pub fn at(summary: &ConversationSummary, sort: ListSort) -> Self {
        Self {
            inclusive: true,
            ..Self::after(summary, sort)
        }
    }

    /// The text handed to clients: `[=][UPDATED|]FILE_NAME`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if self.inclusive {
            text.push('=');
        }
        if let Some(updated_at) = &self.updated_at {
            text.push_str(updated_at);
            text.push('|');
        }
        text.push_str(&self.file_name);
        text
    }

    /// Reads a cursor handed out for a listing sorted by `sort`.
    pub fn decode(text: &str, sort: ListSort) -> Result<Self, InvalidCursor> {
        let invalid = || InvalidCursor(text.to_string());
        let (inclusive, rest) = match text.strip_prefix('=') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (updated_at, file_name) = match sort {
            ListSort::Created => (None, rest),
            ListSort::Updated => {
                let (updated_at, file_name) = rest.split_once('|').ok_or_else(invalid)?;
                (Some(updated_at.to_string()), file_name)
            }
        };
        if !(file_name.starts_with("rollout-") && file_name.ends_with(".jsonl"))
            || file_name.contains(['/', '|'])
        {
            return Err(invalid());
        }
        Ok(Self {
            file_name: file_name.to_string(),
            updated_at,
            inclusive,
        })
    }

    /// Whether `summary` lies past this position in a listing in `ascending` order.
    fn admits(&self, summary: &ConversationSummary, ascending: bool) -> bool {
        let key =
            |updated: Option<&str>, name: &str| (updated.map(str::to_string), name.to_string());
        let here = key(self.updated_at.as_deref(), &self.file_name);
        let there = key(
            self.updated_at
                .as_ref()
                .map(|_| summary.updated_at.as_str()),
            &file_name(summary),
        );
        match (ascending, self.inclusive) {
            (true, false) => there > here,
            (true, true) => there >= here,
            (false, false) => there < here,
            (false, true) => there <= here,
        }
    }
}

fn file_name(summary: &ConversationSummary) -> String {
    summary
        .path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl ThreadFilter {
    /// Whether `summary` passes every filter but the ancestry one (which needs the other
    /// threads: see [`Self::page`]).
    fn admits(&self, summary: &ConversationSummary) -> bool {
        let text = self.text.as_ref().map(|text| text.to_ascii_lowercase());
        summary.has_turns
            && self
                .cwds
                .as_ref()
                .is_none_or(|cwds| cwds.contains(&summary.cwd))
            && text.as_ref().is_none_or(|text| {
                summary.preview.to_ascii_lowercase().contains(text)
                    || summary
                        .name
                        .as_ref()
                        .is_some_and(|name| name.to_ascii_lowercase().contains(text))
            })
            && (self.source_kinds.is_empty() || self.source_kinds.contains(&summary.source.kind()))
            && (self.model_providers.is_empty()
                || summary
                    .model_provider
                    .as_ref()
                    .is_some_and(|provider| self.model_providers.contains(provider)))
            && self
                .included
                .as_ref()
                .is_none_or(|ids| ids.contains(&summary.id))
            && !self.excluded.contains(&summary.id)
            && self
                .parent
                .is_none_or(|parent| summary.parent_id() == Some(parent))
            && self
                .cursor
                .as_ref()
                .is_none_or(|cursor| cursor.admits(summary, self.ascending))
    }

    /// One page of `all` (every thread of the listed root, in any order), as the index
    /// would answer.
    pub fn page(&self, all: Vec<ConversationSummary>) -> ConversationsPage {
        let descendants = self.ancestor.map(|ancestor| descendants_of(ancestor, &all));
        let mut found: Vec<ConversationSummary> = all
            .into_iter()
            .filter(|summary| {
                self.admits(summary)
                    && descendants
                        .as_ref()
                        .is_none_or(|ids| ids.contains(&summary.id))
            })
            .collect();
        let sort = self.sort;
        found.sort_by_cached_key(|summary| {
            (
                (sort == ListSort::Updated).then(|| summary.updated_at.clone()),
                file_name(summary),
            )
        });
        if !self.ascending {
            found.reverse();
        }
        let next_cursor = (found.len() > self.limit).then(|| {
            found.truncate(self.limit);
            found
                .last()
                .map(|last| ListCursor::after(last, sort).encode())
        });
        ConversationsPage {
            items: found,
            next_cursor: next_cursor.flatten(),
        }
    }
}

/// The ids of every thread spawned from `ancestor`, at any depth.
fn descendants_of(ancestor: ConversationId, all: &[ConversationSummary]) -> Vec<ConversationId> {
    let mut children: HashMap<ConversationId, Vec<ConversationId>> = HashMap::new();
    for summary in all {
        if let Some(parent) = summary.parent_id() {
            children.entry(parent).or_default().push(summary.id);
        }
    }
    let mut found = Vec::new();
    let mut next = vec![ancestor];
    while let Some(id) = next.pop() {
        for child in children.get(&id).into_iter().flatten() {
            if *child != ancestor && !found.contains(child) {
                found.push(*child);
                next.push(*child);
            }
        }
    }
    found
}
