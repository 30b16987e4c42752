//! A started process as its owner sees it: read what it printed since the last read, wait
//! for more or for its exit, write to its terminal, stop it.

use std::sync::Arc;

use bytes::Bytes;
use keel_protocol::ExecSessionId;
use keel_protocol::exec_server::{ExecOutputStream, TerminateMode, TerminateParams, WriteParams};
use tokio::time::Instant;

use super::connected::Connected;
use super::error::ProcessError;
use super::router::ProcessState;

/// What arrived for a process since the last read.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Output chunks in arrival order.
    pub chunks: Vec<(ExecOutputStream, Bytes)>,
    /// Output that was dropped before it could be read.
    pub dropped_bytes: u64,
    /// The exit code, once the process exited.
    pub exit_code: Option<i32>,
    /// The exec-server connection is gone: no more output and no exit will come.
    pub disconnected: bool,
}

impl Collected {
    /// Nothing will follow this.
    pub(crate) fn is_final(&self) -> bool {
        self.exit_code.is_some() || self.disconnected
    }
}

/// A process started through the [`ProcessLayer`](super::ProcessLayer).
///
/// Dropping a handle whose process still runs kills the process's group.
pub(crate) struct ProcessHandle {
    connected: Arc<Connected>,
    session_id: ExecSessionId,
    state: Arc<ProcessState>,
    finished: bool,
}

impl ProcessHandle {
    pub(super) fn new(
        connected: Arc<Connected>,
        session_id: ExecSessionId,
        state: Arc<ProcessState>,
    ) -> Self {
        Self {
            connected,
            session_id,
            state,
            finished: false,
        }
    }

    /// Takes everything that arrived since the last read, without waiting.
    pub(crate) fn take(&mut self) -> Collected {
        let mut unread = self.state.lock();
        let collected = Collected {
            chunks: unread.chunks.drain(..).collect(),
            dropped_bytes: std::mem::take(&mut unread.dropped_bytes),
            exit_code: unread.exit_code,
            disconnected: unread.disconnected,
        };
        unread.bytes = 0;
        drop(unread);
        if collected.is_final() {
            self.finished = true;
        }
        collected
    }

    /// Waits until something arrives (output, the exit) or `deadline` passes, then takes it;
    /// an empty result means the deadline passed. Cancel safe.
    pub(crate) async fn next(&mut self, deadline: Option<Instant>) -> Collected {
        loop {
            let collected = self.take();
            if !collected.chunks.is_empty() || collected.dropped_bytes > 0 || collected.is_final() {
                return collected;
            }
            let changed = self.state.changed.notified();
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, changed).await.is_err() {
                        return Collected::default();
                    }
                }
                None => changed.await,
            }
        }
    }

    /// Writes bytes to the process's terminal (only a PTY process has an open input).
    pub(crate) async fn write(&self, bytes: Vec<u8>) -> Result<(), ProcessError> {
        self.connected
            .client
            .write(WriteParams {
                session_id: self.session_id.clone(),
                chunk: bytes.into(),
            })
            .await?;
        Ok(())
    }

    /// Kills the process's whole group at once (SIGKILL); its exit is still reported.
    pub(crate) async fn kill(&self) {
        kill(&self.connected, &self.session_id).await;
    }
}

async fn kill(connected: &Connected, session_id: &ExecSessionId) {
    let params = TerminateParams {
        session_id: session_id.clone(),
        mode: Some(TerminateMode::Force),
    };
    if let Err(err) = connected.client.terminate(params).await {
        tracing::debug!(session = %session_id, %err, "could not terminate the process");
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        self.connected.states.release(&self.session_id);
        if self.finished {
            return;
        }
        // The owner gave up on a running process: it must not outlive the owner.
        let connected = self.connected.clone();
        let session_id = self.session_id.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { kill(&connected, &session_id).await });
            }
            Err(_) => tracing::debug!(session = %session_id, "no runtime to stop the process"),
        }
    }
}
