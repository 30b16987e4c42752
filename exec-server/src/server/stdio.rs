//! The `stdio://` transport: one connection on the process's own stdin and stdout, moved by
//! two dedicated threads (blocking reads there cannot hold up runtime shutdown; the stdout
//! thread encodes output events straight into its write buffer).

use std::os::fd::AsFd;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::processor::Connection;
use crate::error::{ExecServerError, Result};
use crate::pipe::enlarge_pipe;
use crate::transport::lines::{read_lines_blocking, write_lines_blocking};
use crate::transport::{INCOMING_CHANNEL_CAPACITY, OUTGOING_CHANNEL_CAPACITY, Outgoing};

/// Connects the process's stdin and stdout. Stdout carries protocol messages only.
pub(super) fn stdio_connection() -> Result<Connection> {
    let (incoming_tx, incoming) = mpsc::channel(INCOMING_CHANNEL_CAPACITY);
    let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CHANNEL_CAPACITY);
    std::thread::Builder::new()
        .name("keel-stdin".to_string())
        .spawn(move || read_lines_blocking(std::io::stdin().lock(), incoming_tx))
        .map_err(ExecServerError::io("starting the stdin thread"))?;
    Ok(Connection {
        label: "stdio".to_string(),
        incoming,
        outgoing,
        writer: Some(spawn_stdout_writer(outgoing_rx)?),
    })
}

/// Starts the writer of stdout; the returned task ends once everything queued is written.
///
/// A dedicated thread, not a task: it encodes output events while the runtime's workers read
/// the children's pipes, which measured faster on two cores than encoding and writing on the
/// runtime (a non-blocking pipe written by a task), despite the extra wakeup per message.
fn spawn_stdout_writer(messages: mpsc::Receiver<Outgoing>) -> Result<JoinHandle<()>> {
    // A duplicate of fd 1 rather than `std::io::stdout()`, whose line buffering would scan
    // every output line for newlines and add a copy; nothing else writes to stdout.
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .map_err(ExecServerError::io("duplicating stdout"))?;
    enlarge_pipe(&stdout, "stdout");
    let (done_tx, done) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("keel-stdout".to_string())
        .spawn(move || {
            write_lines_blocking(messages, stdout);
            drop(done_tx);
        })
        .map_err(ExecServerError::io("starting the stdout thread"))?;
    Ok(tokio::spawn(async move {
        // Resolves when the stdout thread has flushed and exited.
        let _ = done.await;
    }))
}
