//! The stdio ends of the pipeline: the reader task turns lines into messages, the writer task
//! turns messages into lines. Nothing else touches stdin or stdout, so stdout carries protocol
//! only (logs go to stderr through `tracing`).

use futures::StreamExt;
use keel_exec_server::JsonLinesCodec;
use keel_protocol::{FrameError, JsonRpcFraming, JsonRpcMessage};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use crate::error::{McpServerError, Result};

/// Messages read but not yet processed. When full, the reader stops reading, so a client that
/// floods the server is slowed by its own pipe. Requests are handled quickly (long work runs
/// in tasks), so 128 is plenty.
pub(crate) const INCOMING_CAPACITY: usize = 128;

/// One unit of client input.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A well-formed JSON-RPC message.
    Message(JsonRpcMessage),
    /// A line that is not a JSON-RPC message, and why (answered, and the session goes on).
    Malformed(FrameError),
}

/// Reads newline-delimited JSON-RPC from `reader` until end of input, with the line limit
/// and error classification every Keel server shares ([`JsonLinesCodec`]).
pub(crate) async fn read_loop<R: AsyncRead + Unpin>(
    reader: R,
    max_line_bytes: usize,
    tx: mpsc::Sender<Incoming>,
) -> Result<()> {
    let mut lines = FramedRead::new(reader, JsonLinesCodec::new(max_line_bytes));
    while let Some(line) = lines.next().await {
        let incoming = match line.map_err(McpServerError::Read)? {
            Ok(message) => Incoming::Message(message),
            Err(bad) => Incoming::Malformed(bad),
        };
        if tx.send(incoming).await.is_err() {
            // The processor has stopped; nothing will read further input.
            return Ok(());
        }
    }
    Ok(())
}

/// Writes every queued message as one line until all senders are gone. A client that closed
/// its end (broken pipe) is a clean stop.
pub(crate) async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::Receiver<JsonRpcMessage>,
) -> Result<()> {
    while let Some(message) = rx.recv().await {
        let mut line = match message.to_json(JsonRpcFraming::WithVersion) {
            Ok(line) => line,
            Err(err) => {
                tracing::error!(%err, "cannot encode an outgoing message; dropped");
                continue;
            }
        };
        line.push('\n');
        let written = match writer.write_all(line.as_bytes()).await {
            Ok(()) => writer.flush().await,
            Err(err) => Err(err),
        };
        match written {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                tracing::debug!("the client closed stdout");
                return Ok(());
            }
            Err(err) => return Err(McpServerError::Write(err)),
        }
    }
    Ok(())
}
