//! The router: one task per connection that moves every output and exit event into the
//! buffer of the process it belongs to, so a process's output waits there for its owner.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use keel_exec_server::ExecServerEvent;
use keel_protocol::ExecSessionId;
use keel_protocol::exec_server::ExecOutputStream;
use tokio::sync::{Notify, broadcast};
use tokio_util::task::AbortOnDropHandle;

/// Unread output a process may hold before its oldest chunks are dropped (counted, and
/// reported to the reader).
const UNREAD_CAP_BYTES: usize = 8 * 1024 * 1024;

/// What has arrived for one process and not been read yet.
#[derive(Debug, Default)]
pub(crate) struct Unread {
    pub chunks: VecDeque<(ExecOutputStream, Bytes)>,
    pub bytes: usize,
    /// Bytes dropped because nobody read them in time (or the router fell behind).
    pub dropped_bytes: u64,
    /// Set once the process exited; nothing follows.
    pub exit_code: Option<i32>,
    /// The connection to the exec-server is gone: no exit will ever be reported.
    pub disconnected: bool,
    /// The owner gave the process up before its exit; the buffer goes when the exit arrives.
    released: bool,
}

/// The buffer of one process and the signal that it changed.
#[derive(Debug, Default)]
pub(crate) struct ProcessState {
    unread: Mutex<Unread>,
    /// One permit per change; the process has one reader at a time.
    pub changed: Notify,
}

impl ProcessState {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Unread> {
        self.unread.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, stream: ExecOutputStream, chunk: Bytes) {
        {
            let mut unread = self.lock();
            if unread.released {
                return;
            }
            unread.bytes += chunk.len();
            unread.chunks.push_back((stream, chunk));
            while unread.bytes > UNREAD_CAP_BYTES {
                let Some((_, oldest)) = unread.chunks.pop_front() else {
                    break;
                };
                unread.bytes -= oldest.len();
                unread.dropped_bytes += oldest.len() as u64;
            }
        }
        self.changed.notify_one();
    }

    fn lost(&self, skipped: u64) {
        // The router missed `skipped` events of the connection; this process may have had
        // some. Output counts are unknown, so the reader is told output may be missing.
        self.lock().dropped_bytes += skipped;
        self.changed.notify_one();
    }

    fn disconnected(&self) {
        self.lock().disconnected = true;
        self.changed.notify_one();
    }
}

/// The buffers of every process of one connection, by exec-server session id.
#[derive(Debug, Default)]
pub(crate) struct ProcessStates {
    by_session: Mutex<HashMap<ExecSessionId, Arc<ProcessState>>>,
    /// Set when the connection closed; processes started after it see it at once.
    closed: Mutex<bool>,
}

impl ProcessStates {
    fn map(&self) -> MutexGuard<'_, HashMap<ExecSessionId, Arc<ProcessState>>> {
        self.by_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The buffer of `session`, created when its first event has not arrived yet.
    pub(crate) fn claim(&self, session: &ExecSessionId) -> Arc<ProcessState> {
        let state = self.map().entry(session.clone()).or_default().clone();
        if *self.closed.lock().unwrap_or_else(PoisonError::into_inner) {
            state.disconnected();
        }
        state
    }

    /// Forgets a process whose owner is done with it. A process that has not reported its
    /// exit yet keeps an empty buffer until it does, so a late exit does not recreate it.
    pub(crate) fn release(&self, session: &ExecSessionId) {
        let mut map = self.map();
        let Some(state) = map.get(session) else {
            return;
        };
        let mut unread = state.lock();
        if unread.exit_code.is_some() || unread.disconnected {
            drop(unread);
            map.remove(session);
        } else {
            unread.released = true;
            unread.chunks.clear();
            unread.bytes = 0;
        }
    }

    /// Records an exit; a released process's buffer goes with it.
    fn exited(&self, session: &ExecSessionId, exit_code: i32) {
        let mut map = self.map();
        let state = map.entry(session.clone()).or_default().clone();
        let released = {
            let mut unread = state.lock();
            unread.exit_code = Some(exit_code);
            unread.released
        };
        if released {
            map.remove(session);
        }
        drop(map);
        state.changed.notify_one();
    }

    fn all(&self) -> Vec<Arc<ProcessState>> {
        self.map().values().cloned().collect()
    }
}

/// Starts the router for one connection's events.
pub(crate) fn spawn(
    mut events: broadcast::Receiver<ExecServerEvent>,
    states: Arc<ProcessStates>,
) -> AbortOnDropHandle<()> {
    AbortOnDropHandle::new(tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ExecServerEvent::Output {
                    session_id,
                    stream,
                    chunk,
                }) => states.claim(&session_id).push(stream, chunk),
                Ok(ExecServerEvent::Exited {
                    session_id,
                    exit_code,
                }) => states.exited(&session_id, exit_code),
                Err(broadcast::error::RecvError::Lagged(skipped)) => {
                    tracing::warn!(skipped, "process events were missed");
                    for state in states.all() {
                        state.lost(skipped);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    tracing::warn!("the exec-server connection closed");
                    *states.closed.lock().unwrap_or_else(PoisonError::into_inner) = true;
                    for state in states.all() {
                        state.disconnected();
                    }
                    return;
                }
            }
        }
    }))
}
