//! Questions a turn is waiting on (approvals, the user's answers, a client tool's output, an
//! MCP server's elicitation): one keyed table per kind, so an answer finds its question and a
//! late or stray one is logged instead of lost silently.

use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// The questions of one kind waiting for answers, by key.
pub(crate) struct PendingAnswers<K, V> {
    /// What an answer is, for the log (`approval`, `tool output`, ...).
    what: &'static str,
    waiting: Mutex<HashMap<K, oneshot::Sender<V>>>,
}

impl<K: Eq + Hash + Display, V> PendingAnswers<K, V> {
    /// An empty table whose log lines call an answer `what`.
    pub(crate) fn new(what: &'static str) -> Self {
        Self {
            what,
            waiting: Mutex::new(HashMap::new()),
        }
    }

    fn waiting(&self) -> MutexGuard<'_, HashMap<K, oneshot::Sender<V>>> {
        // Every critical section is one map operation, so a poisoned map is still valid.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for an answer to `key`: it arrives on the receiver.
    pub(crate) fn register(&self, key: K) -> oneshot::Receiver<V> {
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(key, tx);
        rx
    }

    /// Stops waiting for `key` (its call ended without an answer, an interrupt say).
    pub(crate) fn forget(&self, key: &K) {
        self.waiting().remove(key);
    }

    /// Delivers the answer to `key`; one nobody waits for is logged and dropped.
    pub(crate) fn resolve(&self, key: &K, answer: V) {
        let sender = self.waiting().remove(key);
        let what = self.what;
        match sender.map(|tx| tx.send(answer)) {
            Some(Ok(())) => {}
            Some(Err(_)) => tracing::debug!(%key, "{what} arrived after its turn ended"),
            None => tracing::warn!(%key, "{what} for an unknown or settled request"),
        }
    }
}
