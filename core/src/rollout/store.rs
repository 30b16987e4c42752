//! Where conversations are recorded and read back from. By default each conversation is a
//! rollout file under `KEEL_HOME` ([`FileRolloutStore`]); an embedding program can keep them
//! elsewhere (a database, object storage) by implementing [`RolloutStore`], or keep them in
//! memory ([`InMemoryRolloutStore`]) for tests and short-lived services.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::fold::RolloutFold;
use super::{LoadedRollout, RolloutItem, RolloutLine, RolloutRecorder, SessionMeta};
use crate::error::{CoreError, Result};

/// The record of one conversation, appended to as it goes.
pub trait RolloutSink: Send + Sync {
    /// Appends `items`, in order; when this returns, they are kept (a failure is reported to
    /// the conversation's client and stops the turn).
    fn record<'a>(&'a self, items: &'a [RolloutItem]) -> BoxFuture<'a, Result<()>>;

    /// The file written, for stores that keep files (clients show it as the thread's path).
    fn path(&self) -> Option<&Path> {
        None
    }
}

/// Where an embedding program's conversations are recorded; set on the manager's builder.
///
/// ```
/// use std::sync::Arc;
/// use keel_core::{ConversationManager, InMemoryRolloutStore};
///
/// let store = Arc::new(InMemoryRolloutStore::default());
/// let manager = ConversationManager::builder()
///     .rollout_store(store.clone())
///     .build()
///     .expect("no tools to check");
/// # let _ = manager;
/// ```
pub trait RolloutStore: Send + Sync {
    /// Starts the record of a new conversation, whose first item is `meta`.
    fn create(&self, meta: SessionMeta) -> BoxFuture<'_, Result<Arc<dyn RolloutSink>>>;

    /// Reopens the record of `id` to continue it; `None` when the store does not hold it.
    fn open(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Arc<dyn RolloutSink>>>>;

    /// Everything recorded for `id`, in order; `None` when the store does not hold it.
    fn load(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Vec<RolloutItem>>>>;
}

impl RolloutSink for RolloutRecorder {
    fn record<'a>(&'a self, items: &'a [RolloutItem]) -> BoxFuture<'a, Result<()>> {
        Box::pin(RolloutRecorder::record(self, items))
    }

    fn path(&self) -> Option<&Path> {
        Some(RolloutRecorder::path(self))
    }
}

/// Rollout files under a Keel home: `sessions/YYYY/MM/DD/rollout-…-ID.jsonl`, as Keel always
/// writes them.
#[derive(Debug, Clone)]
pub struct FileRolloutStore {
    keel_home: PathBuf,
}

impl FileRolloutStore {
    /// The store in `keel_home`.
    pub fn new(keel_home: impl Into<PathBuf>) -> Self {
        Self {
            keel_home: keel_home.into(),
        }
    }
}

impl RolloutStore for FileRolloutStore {
    fn create(&self, meta: SessionMeta) -> BoxFuture<'_, Result<Arc<dyn RolloutSink>>> {
        Box::pin(async move {
            let recorder = RolloutRecorder::create(&self.keel_home, meta).await?;
            Ok(Arc::new(recorder) as Arc<dyn RolloutSink>)
        })
    }

    fn open(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Arc<dyn RolloutSink>>>> {
        Box::pin(async move {
            let Some(path) = super::find_rollout_path(&self.keel_home, id).await? else {
                return Ok(None);
            };
            let recorder = RolloutRecorder::open_append(&path).await?;
            Ok(Some(Arc::new(recorder) as Arc<dyn RolloutSink>))
        })
    }

    fn load(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Vec<RolloutItem>>>> {
        Box::pin(async move {
            let Some(path) = super::find_rollout_path(&self.keel_home, id).await? else {
                return Ok(None);
            };
            let text =
                tokio::fs::read_to_string(&path)
                    .await
                    .map_err(|err| CoreError::Rollout {
                        path: path.clone(),
                        message: err.to_string(),
                    })?;
            let items = text
                .lines()
                .filter_map(|line| match serde_json::from_str::<RolloutLine>(line) {
                    Ok(line) => Some(line.item),
                    Err(err) => {
                        tracing::warn!(
                            "{}: skipping unreadable rollout line: {err}",
                            path.display()
                        );
                        None
                    }
                })
                .collect();
            Ok(Some(items))
        })
    }
}

/// Conversations kept in this process's memory: nothing touches the disk, and everything is
/// gone with the store. For tests, and for services that keep their own records.
#[derive(Debug, Default)]
pub struct InMemoryRolloutStore {
    conversations: Arc<Mutex<HashMap<ConversationId, Vec<RolloutItem>>>>,
}

impl InMemoryRolloutStore {
    /// What has been recorded for `id` so far.
    pub fn items(&self, id: ConversationId) -> Option<Vec<RolloutItem>> {
        self.conversations
            .lock()
            .ok()
            .and_then(|map| map.get(&id).cloned())
    }

    /// The conversations it holds.
    pub fn ids(&self) -> Vec<ConversationId> {
        self.conversations
            .lock()
            .map(|map| map.keys().copied().collect())
            .unwrap_or_default()
    }
}

/// Appends to one conversation's entry of an [`InMemoryRolloutStore`].
struct InMemorySink {
    id: ConversationId,
    conversations: Arc<Mutex<HashMap<ConversationId, Vec<RolloutItem>>>>,
}

impl RolloutSink for InMemorySink {
    fn record<'a>(&'a self, items: &'a [RolloutItem]) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut map = self.conversations.lock().map_err(|_| CoreError::Rollout {
                path: stored_source(self.id),
                message: "the in-memory store's lock was poisoned".to_string(),
            })?;
            map.entry(self.id).or_default().extend_from_slice(items);
            Ok(())
        })
    }
}

impl RolloutStore for InMemoryRolloutStore {
    fn create(&self, meta: SessionMeta) -> BoxFuture<'_, Result<Arc<dyn RolloutSink>>> {
        Box::pin(async move {
            let id = meta.id;
            let sink = InMemorySink {
                id,
                conversations: self.conversations.clone(),
            };
            sink.record(&[RolloutItem::SessionMeta(meta)]).await?;
            Ok(Arc::new(sink) as Arc<dyn RolloutSink>)
        })
    }

    fn open(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Arc<dyn RolloutSink>>>> {
        Box::pin(async move {
            let held = self.items(id).is_some();
            Ok(held.then(|| {
                Arc::new(InMemorySink {
                    id,
                    conversations: self.conversations.clone(),
                }) as Arc<dyn RolloutSink>
            }))
        })
    }

    fn load(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Vec<RolloutItem>>>> {
        Box::pin(async move { Ok(self.items(id)) })
    }
}

/// How errors name a conversation kept outside a file.
pub(crate) fn stored_source(id: ConversationId) -> PathBuf {
    PathBuf::from(format!("<in-memory rollout {id}>"))
}

/// A conversation read back from a store's items, as a rollout file is read.
pub(crate) fn fold_items(items: Vec<RolloutItem>, source: PathBuf) -> Result<LoadedRollout> {
    let mut fold = RolloutFold::default();
    for item in items {
        fold.push(item, |_| true, &mut |_| {});
    }
    fold.finish(source)
}
