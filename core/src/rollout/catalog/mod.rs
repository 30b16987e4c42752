//! The recorded threads as a service browses them: found by id, listed with filters and a
//! cursor, searched by their messages and names. Files under a Keel home are the default
//! ([`FileThreadCatalog`]: the SQLite thread index, or the rollouts read one by one when the
//! index cannot be used); a service whose threads live elsewhere implements [`ThreadCatalog`].

use std::collections::HashSet;
use std::path::PathBuf;

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::{
    ConversationSummary, ConversationsPage, SearchHit, SearchPage, ThreadFilter,
    first_message_match, list_conversations_in, summarise,
};
use crate::error::CoreError;

mod notes;
mod search;

pub use notes::{NoteSwap, ThreadNotes};
pub use search::ThreadSearch;

#[cfg(feature = "thread-index")]
mod indexed;
#[cfg(not(feature = "thread-index"))]
mod unindexed;
#[cfg(not(feature = "thread-index"))]
use unindexed as indexed;

/// Why a catalog could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ThreadCatalogError {
    /// A search cursor this catalog did not hand out (or from before the index changed).
    #[error("`cursor` {0:?} is not a cursor this server returned; search again without one")]
    UnknownCursor(String),
    /// The records could not be read.
    #[error(transparent)]
    Read(#[from] CoreError),
}

/// The recorded threads, for listing and finding them by id.
pub trait ThreadCatalog: Send + Sync {
    /// The summary of thread `id` (live, or with `archived` in the archive); `None` when the
    /// catalog does not hold it.
    fn find(
        &self,
        id: ConversationId,
        archived: bool,
    ) -> BoxFuture<'_, Result<Option<ConversationSummary>, ThreadCatalogError>>;

    /// Threads that had a turn and pass `filter`, a page at a time.
    fn list(
        &self,
        filter: ThreadFilter,
    ) -> BoxFuture<'_, Result<ConversationsPage, ThreadCatalogError>>;

    /// Threads that had a turn whose user or assistant messages, or name, contain the term,
    /// newest first, each with a snippet of its first match.
    fn search(&self, search: ThreadSearch)
    -> BoxFuture<'_, Result<SearchPage, ThreadCatalogError>>;

    /// Whether the threads can be reached now (a server that cannot is not ready for
    /// clients: its `/readyz` fails).
    fn ready(&self) -> BoxFuture<'_, Result<(), ThreadCatalogError>>;

    /// Names thread `id`, live or archived (a thread running in this process is named
    /// through its own record instead); `false` when the catalog does not hold it.
    fn rename(
        &self,
        id: ConversationId,
        name: String,
    ) -> BoxFuture<'_, Result<bool, ThreadCatalogError>>;

    /// Moves thread `id` to the archive; `false` when it is not among the live threads.
    fn archive(&self, id: ConversationId) -> BoxFuture<'_, Result<bool, ThreadCatalogError>>;

    /// Moves thread `id` back from the archive and returns its summary; `None` when it is not
    /// archived.
    fn unarchive(
        &self,
        id: ConversationId,
    ) -> BoxFuture<'_, Result<Option<ConversationSummary>, ThreadCatalogError>>;

    /// Removes thread `id`, live or archived, for good; `false` when the catalog does not
    /// hold it.
    fn delete(&self, id: ConversationId) -> BoxFuture<'_, Result<bool, ThreadCatalogError>>;

    /// Changes other servers make to the threads, for a catalog several servers share;
    /// `None` (the default) for one only this server writes.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<super::ThreadChange>> {
        None
    }

    /// Notes kept beside each thread, for a catalog several servers share; `None` (the
    /// default) when the server keeps such things itself.
    fn notes(&self) -> Option<&dyn ThreadNotes> {
        None
    }

    /// Of threads `ids`, those whose turn runs on another server now (so a listing can show
    /// them running, not merely recorded); none (the default) when this server is the only
    /// one running turns.
    fn running_elsewhere(
        &self,
        ids: Vec<ConversationId>,
    ) -> BoxFuture<'_, Result<HashSet<ConversationId>, ThreadCatalogError>> {
        drop(ids);
        Box::pin(async { Ok(HashSet::new()) })
    }
}

/// The rollouts under a Keel home, through the thread index when it can be used.
pub struct FileThreadCatalog {
    keel_home: PathBuf,
    index: indexed::Index,
}

impl FileThreadCatalog {
    /// The catalog of `keel_home` (its index is opened, or built, on first use).
    pub fn new(keel_home: impl Into<PathBuf>) -> Self {
        let keel_home = keel_home.into();
        Self {
            index: indexed::Index::new(&keel_home),
            keel_home,
        }
    }

    fn root(&self, archived: bool) -> PathBuf {
        self.keel_home.join(if archived {
            super::ARCHIVED_SESSIONS_DIR
        } else {
            super::SESSIONS_DIR
        })
    }

    /// The rollout file of thread `id` (live, or with `archived` in the archive): from the
    /// index, or by walking the rollouts when there is none.
    pub async fn find_path(
        &self,
        id: ConversationId,
        archived: bool,
    ) -> Result<Option<PathBuf>, CoreError> {
        if let Some(found) = self.index.find(id, archived).await {
            return Ok(found);
        }
        let root = self.root(archived);
        let mut cursor = None;
        loop {
            let page = list_conversations_in(&root, 200, cursor.as_deref()).await?;
            if let Some(found) = page.items.into_iter().find(|s| s.id == id) {
                return Ok(Some(found.path));
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(None),
            }
        }
    }

    /// The rollout file of thread `id`, live or else archived.
    async fn find_anywhere(&self, id: ConversationId) -> Result<Option<PathBuf>, CoreError> {
        match self.find_path(id, false).await? {
            Some(path) => Ok(Some(path)),
            None => self.find_path(id, true).await,
        }
    }

    /// `list` without the index: every rollout's head, filtered and paged as the index would.
    async fn scan_list(&self, filter: &ThreadFilter) -> Result<ConversationsPage, CoreError> {
        let root = self.root(filter.archived);
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

    /// `search` without the index: the rollouts one by one, each read up to its first match.
    /// Its cursor is a file name, as `list`'s.
    async fn scan_search(&self, search: &ThreadSearch) -> Result<SearchPage, CoreError> {
        let root = self.root(search.archived);
        let mut found: Vec<SearchHit> = Vec::new();
        let mut cursor = search.cursor.clone();
        loop {
            let page = list_conversations_in(&root, 100, cursor.as_deref()).await?;
            for summary in page.items {
                if found.len() == search.limit {
                    let next = found.last().and_then(|hit| file_name(&hit.summary));
                    return Ok(SearchPage {
                        items: found,
                        next_cursor: next,
                    });
                }
                if !summary.has_turns {
                    continue;
                }
                let path = summary.path.clone();
                let needle = search.term.clone();
                let matched =
                    tokio::task::spawn_blocking(move || first_message_match(&path, &needle))
                        .await
                        .map_err(|err| CoreError::Rollout {
                            path: summary.path.clone(),
                            message: format!("searching stopped: {err}"),
                        })?;
                let snippet = matched.or_else(|| {
                    summary
                        .name
                        .as_ref()
                        .filter(|name| name.to_lowercase().contains(&search.term))
                        .cloned()
                });
                if let Some(snippet) = snippet {
                    found.push(SearchHit { summary, snippet });
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => {
                    return Ok(SearchPage {
                        items: found,
                        next_cursor: None,
                    });
                }
            }
        }
    }
}

impl ThreadCatalog for FileThreadCatalog {
    fn rename(
        &self,
        id: ConversationId,
        name: String,
    ) -> BoxFuture<'_, Result<bool, ThreadCatalogError>> {
        Box::pin(async move {
            let Some(path) = self.find_anywhere(id).await? else {
                return Ok(false);
            };
            super::RolloutRecorder::open_append(&path)
                .await?
                .record(&[super::RolloutItem::ThreadName(name)])
                .await?;
            Ok(true)
        })
    }

    fn archive(&self, id: ConversationId) -> BoxFuture<'_, Result<bool, ThreadCatalogError>> {
        Box::pin(async move {
            let Some(path) = self.find_path(id, false).await? else {
                return Ok(false);
            };
            super::archive_rollout(&self.keel_home, &path).await?;
            Ok(true)
        })
    }

    fn unarchive(
        &self,
        id: ConversationId,
    ) -> BoxFuture<'_, Result<Option<ConversationSummary>, ThreadCatalogError>> {
        Box::pin(async move {
            let Some(path) = self.find_path(id, true).await? else {
                return Ok(None);
            };
            let path = super::unarchive_rollout(&self.keel_home, &path).await?;
            match summarise(&path).await {
                Some(summary) => Ok(Some(summary)),
                None => Err(ThreadCatalogError::Read(CoreError::Rollout {
                    path,
                    message: "not a Keel rollout file".to_string(),
                })),
            }
        })
    }

    fn delete(&self, id: ConversationId) -> BoxFuture<'_, Result<bool, ThreadCatalogError>> {
        Box::pin(async move {
            let Some(path) = self.find_anywhere(id).await? else {
                return Ok(false);
            };
            super::delete_rollout(&path).await?;
            Ok(true)
        })
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), ThreadCatalogError>> {
        Box::pin(async move {
            let unreachable = |message: String| {
                ThreadCatalogError::Read(CoreError::Rollout {
                    path: self.keel_home.clone(),
                    message,
                })
            };
            match tokio::fs::metadata(&self.keel_home).await {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(unreachable("not a directory".to_string())),
                Err(err) => Err(unreachable(err.to_string())),
            }
        })
    }

    fn find(
        &self,
        id: ConversationId,
        archived: bool,
    ) -> BoxFuture<'_, Result<Option<ConversationSummary>, ThreadCatalogError>> {
        Box::pin(async move {
            let Some(path) = self.find_path(id, archived).await? else {
                return Ok(None);
            };
            Ok(summarise(&path).await)
        })
    }

    fn list(
        &self,
        filter: ThreadFilter,
    ) -> BoxFuture<'_, Result<ConversationsPage, ThreadCatalogError>> {
        Box::pin(async move {
            if let Some(page) = self.index.list(&filter).await {
                return Ok(page);
            }
            Ok(self.scan_list(&filter).await?)
        })
    }

    fn search(
        &self,
        search: ThreadSearch,
    ) -> BoxFuture<'_, Result<SearchPage, ThreadCatalogError>> {
        Box::pin(async move {
            let search = ThreadSearch {
                term: search.term.to_lowercase(),
                ..search
            };
            let usable = self.index.usable().await;
            // The index pages by its own positions, the scan by file names: a cursor from the
            // other (the index became unusable between two pages) is refused, not misread.
            if let Some(cursor) = &search.cursor
                && cursor.parse::<i64>().is_ok() != usable
            {
                return Err(ThreadCatalogError::UnknownCursor(cursor.clone()));
            }
            if let Some(page) = self.index.search(&search).await {
                return Ok(page);
            }
            Ok(self.scan_search(&search).await?)
        })
    }
}

/// A summary's rollout file name (the scan's cursor).
fn file_name(summary: &ConversationSummary) -> Option<String> {
    summary
        .path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
}
