//! Threads in a PostgreSQL database, so app-servers on several hosts list, search, resume
//! and take over each other's threads. One server appends to a thread at a time: opening a
//! thread bumps its epoch, which fences the previous writer's next append; while a turn runs
//! its server holds a lease (kept on the database's clock, renewed as the turn runs) and
//! another server's resume waits for it to end or lapse.

mod catalog;
mod changes;
mod digest;
mod failure;
mod notes;
mod row;
mod sink;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::{RolloutItem, RolloutLine, RolloutSink, RolloutStore, SessionMeta};
use crate::error::{CoreError, Result};
use crate::postgres::{ConnInfo, Lookup, PostgresError, SharedPool};
use failure::{store_error, unreadable};
use sink::PostgresSink;

/// How long a running turn's lease lasts unless renewed, by default.
pub const DEFAULT_THREAD_LEASE: Duration = Duration::from_secs(30);

/// How one server takes part in a shared thread store.
#[derive(Debug, Clone)]
pub struct ThreadLease {
    /// This server's name, shown to a client whose resume finds the thread busy here.
    pub holder: String,
    /// How long a running turn's lease lasts unless renewed: after a server dies, its
    /// threads can be resumed elsewhere this long after its last renewal.
    pub length: Duration,
    /// How long opening a thread waits for another server's turn to end before failing.
    pub wait: Duration,
}

impl Default for ThreadLease {
    fn default() -> Self {
        let host = hostname();
        Self {
            holder: format!("{host}:{}", std::process::id()),
            length: DEFAULT_THREAD_LEASE,
            wait: DEFAULT_THREAD_LEASE,
        }
    }
}

/// The machine's name, for the default holder.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "keel".to_string())
}

/// Threads kept in a PostgreSQL database that several servers share.
#[derive(Clone)]
pub struct PostgresThreadStore {
    shared: SharedPool,
    lease: ThreadLease,
    /// Who this process is to the others: its name and a random part, so two processes
    /// given one name never take each other's leases or ignore each other's changes.
    instance: String,
    changes: Arc<changes::Changes>,
}

/// Separates a server's name from its instance's random part in the lease's holder.
const INSTANCE_MARK: char = '#';

/// The server's name in a lease holder, as clients are told it.
fn shown_holder(holder: &str) -> String {
    holder
        .rsplit_once(INSTANCE_MARK)
        .map_or(holder, |(name, _)| name)
        .to_string()
}

/// Takes a thread for this server: bumps its epoch unless another server's turn holds it.
/// Other servers hear of it (`$3`, the announcement): their copies are stale.
const TAKE: &str = concat!(
    "WITH taken AS (
         UPDATE keel_threads
         SET lease_epoch = lease_epoch + 1, lease_holder = NULL, lease_expires_at = NULL
         WHERE id = $1
           AND (lease_holder IS NULL OR lease_holder = $2 OR lease_expires_at < now())
         RETURNING lease_epoch)
     SELECT lease_epoch, pg_notify('",
    changes::channel!(),
    "', $3) FROM taken"
);

/// Who holds a thread, and for how many more milliseconds.
const HOLDER: &str = "SELECT lease_holder,
         GREATEST(0, CEIL(EXTRACT(EPOCH FROM (lease_expires_at - now())) * 1000))::bigint
     FROM keel_threads WHERE id = $1";

const CREATE: &str = "INSERT INTO keel_threads
     (id, list_key, created_at, updated_at, cwd, model, model_provider, source_json, source_kind)
     VALUES ($1, $2, $3, $3, $4, $5, $6, $7, $8)";

impl PostgresThreadStore {
    /// Connects to `store` (a `postgres://` URL or libpq `key=value` string, completed by
    /// `PG*` variables, a service file and the password file as libpq would) and brings its
    /// schema up to date.
    pub async fn connect(store: &str, lease: ThreadLease) -> Result<Self> {
        let bad = |err: PostgresError| CoreError::ThreadStore {
            store: store_shown(store),
            message: err.to_string(),
        };
        let info = ConnInfo::resolve(store, &Lookup::process()).map_err(bad)?;
        let shared = SharedPool::connect(&info).await.map_err(|err| match err {
            PostgresError::Named { store, cause } => CoreError::ThreadStore {
                store,
                message: cause,
            },
            other => CoreError::ThreadStore {
                store: info.display(),
                message: other.to_string(),
            },
        })?;
        let random = uuid::Uuid::new_v4().simple().to_string();
        let instance = format!("{}{INSTANCE_MARK}{}", lease.holder, &random[..8]);
        let changes = Arc::new(changes::Changes::follow(shared.clone(), instance.clone()).await);
        Ok(Self {
            shared,
            lease,
            instance,
            changes,
        })
    }

    /// The store as shown in messages (no password).
    pub fn describe(&self) -> &str {
        self.shared.shown()
    }

    fn sink(&self, id: ConversationId, epoch: i64) -> Arc<dyn RolloutSink> {
        Arc::new(PostgresSink::new(
            id,
            self.shared.clone(),
            self.instance.clone(),
            self.lease.length,
            epoch,
        ))
    }

    /// Bumps `id`'s epoch for this server, waiting (up to the lease's `wait`) for a turn
    /// running elsewhere to end; `None` when the store does not hold the thread.
    async fn take(&self, id: ConversationId) -> Result<Option<i64>> {
        let key = id.to_string();
        let announce = changes::payload(id, super::ThreadChangeKind::Opened, &self.instance);
        let deadline = tokio::time::Instant::now() + self.lease.wait;
        loop {
            let taken = self
                .shared
                .query(TAKE, &[&key, &self.instance, &announce])
                .await
                .map_err(|err| store_error(&self.shared, err))?;
            if let Some(row) = taken.first() {
                let epoch: i64 = row
                    .try_get(0)
                    .map_err(|_| unreadable(&self.shared, "the thread's epoch"))?;
                return Ok(Some(epoch));
            }
            let held = self
                .shared
                .query(HOLDER, &[&key])
                .await
                .map_err(|err| store_error(&self.shared, err))?;
            let Some(row) = held.first() else {
                return Ok(None);
            };
            let holder: Option<String> = row.try_get(0).ok().flatten();
            if holder.is_none() {
                // Released between the two queries: try again at once.
                continue;
            }
            let left_ms: i64 = row.try_get(1).unwrap_or_default();
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(CoreError::ThreadHeld {
                    id,
                    holder: shown_holder(holder.as_deref().unwrap_or_default()),
                    retry_after_secs: u64::try_from(left_ms).unwrap_or_default().div_ceil(1000),
                });
            }
            // The holder renews well before the lease lapses: checking a few times a second
            // notices the end of its turn, or its death, soon enough.
            let pause = Duration::from_millis(u64::try_from(left_ms).unwrap_or(0).clamp(20, 250));
            tokio::time::sleep(pause.min(deadline - now)).await;
        }
    }
}

/// `store` as shown before it could be parsed: nothing of it, since a string that could not
/// be read cannot be told apart from its password.
fn store_shown(_store: &str) -> String {
    "(the configured store)".to_string()
}

impl RolloutStore for PostgresThreadStore {
    fn create(&self, meta: SessionMeta) -> BoxFuture<'_, Result<Arc<dyn RolloutSink>>> {
        Box::pin(async move {
            let id = meta.id;
            let now = Utc::now();
            let list_key = format!("rollout-{}-{id}.jsonl", now.format("%Y-%m-%dT%H-%M-%S"));
            let kind = row::kind_name(meta.source_or_default().kind());
            let source = serde_json::to_string(&meta.source_or_default()).map_err(|err| {
                CoreError::ThreadStore {
                    store: self.describe().to_string(),
                    message: format!("cannot serialise the thread's source: {err}"),
                }
            })?;
            let cwd = meta.cwd.to_string_lossy().into_owned();
            self.shared
                .execute(
                    CREATE,
                    &[
                        &id.to_string(),
                        &list_key,
                        &meta.timestamp,
                        &cwd,
                        &meta.model,
                        &meta.model_provider,
                        &source,
                        &kind,
                    ],
                )
                .await
                .map_err(|err| store_error(&self.shared, err))?;
            let sink = self.sink(id, 1);
            sink.record(&[RolloutItem::SessionMeta(meta)]).await?;
            Ok(sink)
        })
    }

    fn open(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Arc<dyn RolloutSink>>>> {
        Box::pin(async move { Ok(self.take(id).await?.map(|epoch| self.sink(id, epoch))) })
    }

    fn load(&self, id: ConversationId) -> BoxFuture<'_, Result<Option<Vec<RolloutItem>>>> {
        Box::pin(async move {
            let key = id.to_string();
            let rows = self
                .shared
                .query(
                    "SELECT line FROM keel_thread_items WHERE thread_id = $1 ORDER BY seq",
                    &[&key],
                )
                .await
                .map_err(|err| store_error(&self.shared, err))?;
            if rows.is_empty() {
                let held = self
                    .shared
                    .query("SELECT 1 FROM keel_threads WHERE id = $1", &[&key])
                    .await
                    .map_err(|err| store_error(&self.shared, err))?;
                return Ok((!held.is_empty()).then(Vec::new));
            }
            let mut items = Vec::with_capacity(rows.len());
            for row in rows {
                let line: String = row
                    .try_get(0)
                    .map_err(|_| unreadable(&self.shared, "an item"))?;
                match serde_json::from_str::<RolloutLine>(&line) {
                    Ok(line) => items.push(line.item),
                    Err(err) => tracing::warn!(thread = %id, "skipping an unreadable item: {err}"),
                }
            }
            Ok(Some(items))
        })
    }
}
