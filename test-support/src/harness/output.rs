//! The tasks that drain a child's stdout and stderr, and the bounded buffers they fill.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::mpsc;

/// Stderr kept for failure messages: the last 64 KiB; older bytes are dropped.
const STDERR_TAIL_BYTES: usize = 64 * 1024;
/// Stdout lines kept for failure messages.
const RECENT_STDOUT_LINES: usize = 20;
/// Parsed stdout lines waiting for the test. When full, the reader stops reading, so the
/// child blocks on its stdout pipe until the test reads: backpressure, nothing is dropped.
pub(crate) const LINE_CHANNEL_CAPACITY: usize = 1024;

/// One stdout line.
#[derive(Debug)]
pub(crate) enum Line {
    /// A JSON message.
    Json(Value),
    /// A line that is not JSON (a protocol violation for a JSON-lines server).
    Text(String),
}

/// Output kept for diagnostics, shared between the drain tasks and the handle.
#[derive(Default)]
pub(crate) struct Diagnostics {
    stderr: Mutex<Vec<u8>>,
    recent_stdout: Mutex<VecDeque<String>>,
    /// Woken whenever stderr grows (or ends), for waits on what a child prints there.
    pub(crate) stderr_changed: tokio::sync::Notify,
}

impl Diagnostics {
    /// The kept stderr, lossily decoded.
    pub(crate) fn stderr(&self) -> String {
        let bytes = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The last stdout lines, oldest first.
    pub(crate) fn recent_stdout(&self) -> Vec<String> {
        let lines = self
            .recent_stdout
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect()
    }

    fn push_stdout(&self, line: &str) {
        let mut lines = self
            .recent_stdout
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if lines.len() == RECENT_STDOUT_LINES {
            lines.pop_front();
        }
        lines.push_back(line.to_owned());
    }

    fn push_stderr(&self, chunk: &[u8]) {
        let mut bytes = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        bytes.extend_from_slice(chunk);
        if bytes.len() > STDERR_TAIL_BYTES {
            let excess = bytes.len() - STDERR_TAIL_BYTES;
            bytes.drain(..excess);
        }
        drop(bytes);
        self.stderr_changed.notify_waiters();
    }
}

/// Reads stdout line by line into `lines` until EOF or until the receiver is gone.
pub(crate) async fn read_stdout(
    stdout: impl AsyncRead + Unpin,
    lines: mpsc::Sender<Line>,
    diagnostics: Arc<Diagnostics>,
) {
    let mut reader = BufReader::new(stdout).lines();
    loop {
        let line = match reader.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                tracing::debug!(%err, "child stdout read failed");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        diagnostics.push_stdout(&line);
        let parsed = match serde_json::from_str(&line) {
            Ok(value) => Line::Json(value),
            Err(_) => Line::Text(line),
        };
        if lines.send(parsed).await.is_err() {
            tracing::debug!("harness dropped; stop reading child stdout");
            break;
        }
    }
}

/// Drains stderr into the diagnostics tail so the child never blocks on a full pipe.
pub(crate) async fn drain_stderr(
    mut stderr: impl AsyncRead + Unpin,
    diagnostics: Arc<Diagnostics>,
) {
    let mut buffer = [0_u8; 8192];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) => {
                diagnostics.stderr_changed.notify_waiters();
                break;
            }
            Ok(read) => diagnostics.push_stderr(buffer.get(..read).unwrap_or_default()),
            Err(err) => {
                tracing::debug!(%err, "child stderr read failed");
                break;
            }
        }
    }
}
