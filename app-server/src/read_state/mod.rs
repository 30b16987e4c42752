//! Which threads a person has seen: kept in files under the Keel home, or beside each thread
//! in a store several servers share, so every server shows the same unread threads.

mod files;
mod rules;
mod shared;

use std::path::Path;
use std::sync::Arc;

use keel_core::ThreadCatalog;
use keel_protocol::ConversationId;
use keel_protocol::app_server::{ThreadReadState, ThreadReadStateOperation};

use crate::error::{AppServerError, Result};
use files::FileReadStates;

/// The read states of the server's threads.
pub(crate) enum ReadStates {
    /// Files under the Keel home.
    Files(Arc<FileReadStates>),
    /// Notes in the shared store.
    Shared(Arc<dyn ThreadCatalog>),
}

impl ReadStates {
    /// Beside the threads when the catalog keeps notes, else in files under `keel_home`.
    pub(crate) fn new(keel_home: &Path, catalog: &Arc<dyn ThreadCatalog>) -> Self {
        match catalog.notes() {
            Some(_) => Self::Shared(catalog.clone()),
            None => Self::Files(Arc::new(FileReadStates::new(keel_home))),
        }
    }

    /// The thread's state; one never marked has nothing unread and an `initial:` revision.
    pub(crate) async fn get(&self, id: ConversationId) -> ThreadReadState {
        match self {
            Self::Files(files) => files.get(id),
            Self::Shared(catalog) => {
                shared::get(catalog.as_ref(), id)
                    .await
                    .unwrap_or_else(|err| {
                        tracing::warn!(thread = %id, "cannot read its read state: {err}");
                        rules::initial(id)
                    })
            }
        }
    }

    /// A turn finished with results nobody has seen: the thread becomes unread from its
    /// earliest such turn on. The state is announced even when it could not be recorded.
    pub(crate) async fn turn_completed(
        &self,
        id: ConversationId,
        turn_id: String,
    ) -> ThreadReadState {
        match self {
            Self::Files(files) => {
                let files = files.clone();
                let fallback = turn_id.clone();
                tokio::task::spawn_blocking(move || files.turn_completed(id, &turn_id))
                    .await
                    .unwrap_or_else(|_| {
                        let mut state = rules::initial(id);
                        rules::turn_completed(&mut state, &fallback);
                        state
                    })
            }
            Self::Shared(catalog) => {
                let edit = |state: &mut ThreadReadState| rules::turn_completed(state, &turn_id);
                match shared::change(catalog.as_ref(), id, edit).await {
                    Ok(state) => state,
                    Err(err) => {
                        tracing::warn!(thread = %id, "cannot record its read state: {err}");
                        let mut state = rules::initial(id);
                        edit(&mut state);
                        state
                    }
                }
            }
        }
    }

    /// Turns were dropped (`thread/revert`): what was unread went with them.
    pub(crate) async fn reverted(&self, id: ConversationId) -> Result<ThreadReadState> {
        match self {
            Self::Files(files) => {
                let files = files.clone();
                tokio::task::spawn_blocking(move || files.reverted(id))
                    .await
                    .map_err(|err| AppServerError::Internal(format!("read state: {err}")))
            }
            Self::Shared(catalog) => shared::change(catalog.as_ref(), id, rules::reverted).await,
        }
    }

    /// A person's `read`/`unread`, refused when `expected` is not the current revision.
    pub(crate) async fn update(
        &self,
        id: ConversationId,
        operation: ThreadReadStateOperation,
        expected: Option<String>,
    ) -> Result<ThreadReadState> {
        match self {
            Self::Files(files) => {
                let files = files.clone();
                tokio::task::spawn_blocking(move || {
                    files.update(id, operation, expected.as_deref())
                })
                .await
                .map_err(|err| AppServerError::Internal(format!("read state update: {err}")))?
            }
            Self::Shared(catalog) => {
                shared::update(catalog.as_ref(), id, operation, expected.as_deref()).await
            }
        }
    }

    /// Forgets a deleted thread's state (a shared store deletes it with the thread).
    pub(crate) fn remove(&self, id: ConversationId) {
        if let Self::Files(files) = self {
            files.remove(id);
        }
    }
}
