//! Servers sharing a store tell each other what they did to threads through PostgreSQL's
//! `LISTEN`/`NOTIFY`: a change is announced in the transaction that makes it (delivered on
//! commit), and every server listens on a connection of its own, reconnecting when it drops.
//! Notifications sent while a server is reconnecting are not replayed to it.

use std::time::Duration;

use keel_protocol::ConversationId;
use tokio::sync::{broadcast, oneshot};

use super::super::{ThreadChange, ThreadChangeKind};
use crate::postgres::SharedPool;

/// The channel changes are announced on, as a literal for the statements that announce.
macro_rules! channel {
    () => {
        "keel_thread_changes"
    };
}
pub(super) use channel;

/// The channel changes are announced on.
pub(super) const CHANNEL: &str = channel!();

/// Announces `$1` on the channel.
pub(super) const ANNOUNCE: &str = concat!("SELECT pg_notify('", channel!(), "', $1)");

/// How many changes a slow receiver may fall behind before it misses some.
const BACKLOG: usize = 256;

/// How long to wait before listening again after the connection dropped.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// The announcement of `kind` on thread `id` by server `by` (a few dozen bytes: far below
/// PostgreSQL's 8000-byte payload limit).
pub(super) fn payload(id: ConversationId, kind: ThreadChangeKind, by: &str) -> String {
    serde_json::to_string(&ThreadChange {
        id,
        kind,
        by: by.to_string(),
    })
    .unwrap_or_default()
}

/// Other servers' changes, as they arrive, while this lives.
pub(super) struct Changes {
    sender: broadcast::Sender<ThreadChange>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Changes {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl Changes {
    /// Starts listening for changes made by servers other than `me`; returns once the first
    /// `LISTEN` is in place (or failed: the listener keeps trying).
    pub(super) async fn follow(shared: SharedPool, me: String) -> Self {
        let (sender, _) = broadcast::channel(BACKLOG);
        let (listening, first) = oneshot::channel();
        let announce = sender.clone();
        let listener = tokio::spawn(async move {
            let mut listening = Some(listening);
            loop {
                let ready = listening.take();
                let result = shared
                    .listen(
                        CHANNEL,
                        || {
                            if let Some(ready) = ready {
                                let _ = ready.send(());
                            }
                        },
                        |payload| match serde_json::from_str::<ThreadChange>(&payload) {
                            Ok(change) if change.by != me => {
                                // No receiver yet is fine: nobody has the thread loaded.
                                let _ = announce.send(change);
                            }
                            Ok(_) => {}
                            Err(err) => {
                                tracing::debug!("ignoring a thread change: {err}: {payload}");
                            }
                        },
                    )
                    .await;
                if let Err(err) = result {
                    tracing::warn!(
                        "listening for other servers' thread changes stopped ({err}); \
                         listening again in {}s",
                        RECONNECT_AFTER.as_secs()
                    );
                }
                tokio::time::sleep(RECONNECT_AFTER).await;
            }
        });
        // The first LISTEN is awaited, so a change right after connecting is not missed.
        let _ = tokio::time::timeout(Duration::from_secs(20), first).await;
        Self { sender, listener }
    }

    /// A receiver of the changes from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<ThreadChange> {
        self.sender.subscribe()
    }
}
