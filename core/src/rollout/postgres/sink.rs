//! Appending to one thread, fenced: every append names the epoch the thread was opened at,
//! so a server whose thread was opened elsewhere since fails its next append (and the engine
//! stops its turn). While a turn runs, the server holds a lease on the thread, renewed as it
//! runs, that tells other servers to wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use keel_protocol::ConversationId;
use tokio::sync::Mutex;

use super::super::ThreadChangeKind;
use super::super::{RolloutItem, RolloutSink};
use super::changes::{ANNOUNCE, payload};
use super::digest::Digest;
use super::failure::store_error;
use crate::error::{CoreError, Result};
use crate::postgres::SharedPool;

/// Milliseconds for SQL intervals.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// What one append sets on the thread's row, fenced by its epoch.
const APPEND: &str = "UPDATE keel_threads SET
         item_count = item_count + $3,
         updated_at = $4,
         has_turns = has_turns OR $5,
         preview = CASE WHEN preview = '' AND $6::text IS NOT NULL THEN $6 ELSE preview END,
         name = COALESCE($7, name),
         lease_holder = CASE WHEN $8::boolean IS NULL THEN lease_holder
                             WHEN $8 THEN $9 ELSE NULL END,
         lease_expires_at = CASE
             WHEN $8::boolean IS NULL THEN lease_expires_at
             WHEN $8 THEN now() + $10::bigint * interval '1 millisecond'
             ELSE NULL END
     WHERE id = $1 AND lease_epoch = $2
     RETURNING item_count - $3";

/// The items of one append, numbered from the row's count before it.
const INSERT_ITEMS: &str = "INSERT INTO keel_thread_items (thread_id, seq, line, message)
     SELECT $1, $2 + n - 1, line, message
     FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS batch(line, message, n)";

/// Keeps a running turn's lease from lapsing.
const RENEW: &str = "UPDATE keel_threads
     SET lease_expires_at = now() + $4::bigint * interval '1 millisecond'
     WHERE id = $1 AND lease_epoch = $2 AND lease_holder = $3";

/// Appends to one thread as long as no other server has opened it since.
pub(super) struct PostgresSink {
    inner: Arc<SinkInner>,
}

struct SinkInner {
    id: ConversationId,
    shared: SharedPool,
    holder: String,
    lease: Duration,
    /// The epoch this sink appends under; held across an append, so appends stay in order.
    epoch: Mutex<i64>,
    /// Whether a turn is running (only then is the lease renewed).
    turn_open: AtomicBool,
    /// Set once an append found the thread taken over: every later one fails at once.
    lost: AtomicBool,
}

impl PostgresSink {
    /// A sink on `id` opened at `epoch`, renewing its lease while a turn runs.
    pub(super) fn new(
        id: ConversationId,
        shared: SharedPool,
        holder: String,
        lease: Duration,
        epoch: i64,
    ) -> Self {
        let inner = Arc::new(SinkInner {
            id,
            shared,
            holder,
            lease,
            epoch: Mutex::new(epoch),
            turn_open: AtomicBool::new(false),
            lost: AtomicBool::new(false),
        });
        tokio::spawn(renew_while_alive(Arc::downgrade(&inner)));
        Self { inner }
    }
}

/// Renews the lease a third of its length at a time while the sink lives and a turn runs; a
/// renewal that finds the lease gone (the thread opened elsewhere) changes nothing.
async fn renew_while_alive(inner: Weak<SinkInner>) {
    let Some(period) = inner.upgrade().map(|inner| inner.lease / 3) else {
        return;
    };
    let mut ticks = tokio::time::interval(period.max(Duration::from_millis(50)));
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if !inner.turn_open.load(Ordering::Acquire) || inner.lost.load(Ordering::Acquire) {
            continue;
        }
        let epoch = *inner.epoch.lock().await;
        let id = inner.id.to_string();
        if let Err(err) = inner
            .shared
            .execute(RENEW, &[&id, &epoch, &inner.holder, &millis(inner.lease)])
            .await
        {
            tracing::warn!(thread = %inner.id, "renewing the thread's lease failed: {err}");
        }
    }
}

impl SinkInner {
    async fn append(&self, items: &[RolloutItem]) -> Result<()> {
        if self.lost.load(Ordering::Acquire) {
            return Err(CoreError::LeaseLost(self.id));
        }
        let digest = Digest::of(items, self.shared.shown())?;
        let epoch = self.epoch.lock().await;
        let id = self.id.to_string();
        let count = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let mut client = self
            .shared
            .client()
            .await
            .map_err(|err| store_error(&self.shared, err))?;
        let failed =
            |err: tokio_postgres::Error| store_error(&self.shared, self.shared.named(err.into()));
        let tx = client.transaction().await.map_err(failed)?;
        let first = tx
            .query_opt(
                APPEND,
                &[
                    &id,
                    &*epoch,
                    &count,
                    &digest.timestamp,
                    &digest.turn_started,
                    &digest.first_user_message,
                    &digest.name,
                    &digest.turn_open,
                    &self.holder,
                    &millis(self.lease),
                ],
            )
            .await
            .map_err(failed)?;
        let Some(first) = first else {
            self.lost.store(true, Ordering::Release);
            return Err(CoreError::LeaseLost(self.id));
        };
        let first: i64 = first.try_get(0).map_err(failed)?;
        tx.execute(
            INSERT_ITEMS,
            &[&id, &first, &digest.lines, &digest.messages],
        )
        .await
        .map_err(failed)?;
        if digest.name.is_some() {
            let announce = payload(self.id, ThreadChangeKind::Renamed, &self.holder);
            tx.execute(ANNOUNCE, &[&announce]).await.map_err(failed)?;
        }
        tx.commit().await.map_err(failed)?;
        if let Some(open) = digest.turn_open {
            self.turn_open.store(open, Ordering::Release);
        }
        Ok(())
    }
}

impl RolloutSink for PostgresSink {
    fn record<'a>(&'a self, items: &'a [RolloutItem]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.inner.append(items))
    }
}
