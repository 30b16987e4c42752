//! The catalog's lookups through the SQLite thread index; each answers `None` (logged) when
//! the index cannot be used, so the catalog reads the rollouts instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_protocol::ConversationId;

use super::search::ThreadSearch;
use crate::rollout::{ConversationsPage, SearchPage, ThreadFilter, ThreadIndex, ThreadIndexError};

/// The index of one Keel home, opened (and built if missing) on first use.
pub(super) struct Index {
    keel_home: PathBuf,
    opened: tokio::sync::OnceCell<Option<Arc<ThreadIndex>>>,
}

impl Index {
    pub(super) fn new(keel_home: &Path) -> Self {
        Self {
            keel_home: keel_home.to_path_buf(),
            opened: tokio::sync::OnceCell::new(),
        }
    }

    async fn opened(&self) -> Option<Arc<ThreadIndex>> {
        self.opened
            .get_or_init(|| async {
                let home = self.keel_home.clone();
                match tokio::task::spawn_blocking(move || ThreadIndex::open(&home)).await {
                    Ok(Ok(index)) => Some(Arc::new(index)),
                    Ok(Err(err)) => {
                        tracing::warn!("no thread index, listings read the rollouts: {err}");
                        None
                    }
                    Err(err) => {
                        tracing::warn!("no thread index: {err}");
                        None
                    }
                }
            })
            .await
            .clone()
    }

    /// Whether the index could be opened.
    pub(super) async fn usable(&self) -> bool {
        self.opened().await.is_some()
    }

    /// The rollout file of thread `id`.
    pub(super) async fn find(&self, id: ConversationId, archived: bool) -> Option<Option<PathBuf>> {
        let index = self.opened().await?;
        on_index(index, move |index| index.find(id, archived)).await
    }

    /// A page of threads.
    pub(super) async fn list(&self, filter: &ThreadFilter) -> Option<ConversationsPage> {
        let index = self.opened().await?;
        let filter = filter.clone();
        on_index(index, move |index| index.list(&filter)).await
    }

    /// A page of search results.
    pub(super) async fn search(&self, search: &ThreadSearch) -> Option<SearchPage> {
        let index = self.opened().await?;
        let search = search.clone();
        on_index(index, move |index| {
            index.search(
                &search.term,
                search.archived,
                search.cursor.as_deref(),
                search.limit,
            )
        })
        .await
    }
}

/// Runs a query on the index off the async threads; `None` (logged) when it fails.
async fn on_index<T: Send + 'static>(
    index: Arc<ThreadIndex>,
    query: impl FnOnce(&ThreadIndex) -> Result<T, ThreadIndexError> + Send + 'static,
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
