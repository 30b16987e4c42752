//! Where a server's threads are recorded and browsed: rollout files under its Keel home (one
//! server), or a store several servers share, which any of them lists, resumes and takes over.

use std::sync::Arc;

use keel_core::{RolloutStore, ThreadCatalog};

/// Where the server's threads live.
#[derive(Clone, Default)]
pub enum ThreadBackend {
    /// Rollout files under the Keel home, with its thread index.
    #[default]
    Files,
    /// A store other servers share (the PostgreSQL thread store, or an embedder's own): it
    /// records threads and answers listings, searches and lookups by id.
    Shared {
        /// Where threads are recorded, resumed and forked from.
        store: Arc<dyn RolloutStore>,
        /// Where threads are listed, searched, named, archived and deleted.
        catalog: Arc<dyn ThreadCatalog>,
    },
}

impl std::fmt::Debug for ThreadBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Files => f.write_str("Files"),
            Self::Shared { .. } => f.write_str("Shared"),
        }
    }
}
