//! Connections that have not finished their handshake (and so have not shown a token yet).
//! Each may take at most [`HANDSHAKE_DEADLINE`], and only [`MAX_PENDING_HANDSHAKES`] wait at
//! once: a new connection beyond that closes the oldest waiting one. On loopback every peer
//! is 127.0.0.1, so the count is of connections, not of peers; and since a real client's
//! handshake takes milliseconds while a flood's idle connections are the oldest, the token
//! holder always gets through a flood that would otherwise use up every descriptor.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How long a connection may take to finish its handshake (HTTP upgrade and token check).
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

/// How many connections may be in their handshake at once.
pub const MAX_PENDING_HANDSHAKES: usize = 256;

/// The connections of one listener that are still in their handshake.
#[derive(Debug, Clone)]
pub struct PendingHandshakes {
    inner: Arc<Mutex<Pending>>,
    limit: usize,
}

#[derive(Debug, Default)]
struct Pending {
    next_id: u64,
    waiting: VecDeque<(u64, CancellationToken)>,
}

impl Default for PendingHandshakes {
    fn default() -> Self {
        Self::with_limit(MAX_PENDING_HANDSHAKES)
    }
}

impl PendingHandshakes {
    /// At most `limit` connections in their handshake at once.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Pending::default())),
            limit: limit.max(1),
        }
    }

    /// Registers a new connection, closing the oldest waiting one when the limit is reached.
    pub fn admit(&self) -> HandshakeSlot {
        let mut pending = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        while pending.waiting.len() >= self.limit {
            if let Some((_, oldest)) = pending.waiting.pop_front() {
                tracing::debug!("too many connections in their handshake: closing the oldest");
                oldest.cancel();
            }
        }
        let id = pending.next_id;
        pending.next_id += 1;
        let evicted = CancellationToken::new();
        pending.waiting.push_back((id, evicted.clone()));
        HandshakeSlot {
            id,
            evicted,
            pending: Arc::clone(&self.inner),
        }
    }

    /// How many connections are in their handshake now.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .waiting
            .len()
    }

    /// Whether no connection is in its handshake.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One connection's place among the pending handshakes; leaves it when dropped.
#[derive(Debug)]
pub struct HandshakeSlot {
    id: u64,
    evicted: CancellationToken,
    pending: Arc<Mutex<Pending>>,
}

impl HandshakeSlot {
    /// Resolves when this connection must close: its deadline passed or a newer connection
    /// took its place. Cancel safe.
    pub async fn expired(&self) {
        tokio::select! {
            () = self.evicted.cancelled() => {}
            () = tokio::time::sleep(HANDSHAKE_DEADLINE) => {}
        }
    }

    /// The token that is cancelled when a newer connection takes this one's place.
    pub fn evicted(&self) -> &CancellationToken {
        &self.evicted
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.waiting.retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_waiting_connection_makes_room() {
        let pending = PendingHandshakes::with_limit(2);
        let first = pending.admit();
        let second = pending.admit();
        assert!(!first.evicted().is_cancelled());
        let third = pending.admit();
        assert!(first.evicted().is_cancelled());
        assert!(!second.evicted().is_cancelled());
        assert_eq!(pending.len(), 2);
        drop(second);
        drop(third);
        assert!(pending.is_empty());
    }
}
