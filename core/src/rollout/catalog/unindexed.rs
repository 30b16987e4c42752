//! Without the `thread-index` feature the catalog always reads the rollouts: every lookup of
//! this stand-in answers `None`.

use std::path::{Path, PathBuf};

use keel_protocol::ConversationId;

use super::search::ThreadSearch;
use crate::rollout::{ConversationsPage, SearchPage, ThreadFilter};

/// No index.
pub(super) struct Index;

impl Index {
    pub(super) fn new(_keel_home: &Path) -> Self {
        Self
    }

    pub(super) async fn usable(&self) -> bool {
        false
    }

    pub(super) async fn find(
        &self,
        _id: ConversationId,
        _archived: bool,
    ) -> Option<Option<PathBuf>> {
        None
    }

    pub(super) async fn list(&self, _filter: &ThreadFilter) -> Option<ConversationsPage> {
        None
    }

    pub(super) async fn search(&self, _search: &ThreadSearch) -> Option<SearchPage> {
        None
    }
}
