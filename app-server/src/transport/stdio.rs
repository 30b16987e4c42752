//! JSON Lines over the process's stdin and stdout. stdout carries protocol only.

use std::sync::Arc;

use futures::StreamExt;
use keel_exec_server::JsonLinesCodec;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use super::{INCOMING_CAPACITY, next_for_client};
use crate::connection::{ConnectionLimits, Incoming, serve};
use crate::delivery::{DELIVERY_CAPACITY, DeliveryQueue};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// How long queued answers may take to reach stdout once stdin has closed.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves one connection on stdio until stdin closes; requests read before that are answered.
pub(crate) async fn serve_stdio(state: Arc<AppState>, limits: ConnectionLimits) {
    let (in_tx, in_rx) = mpsc::channel(INCOMING_CAPACITY);
    let queue = Arc::new(DeliveryQueue::new(DELIVERY_CAPACITY));
    let max_line_bytes = limits.max_line_bytes;
    let reader = tokio::spawn(async move {
        let mut lines = FramedRead::new(tokio::io::stdin(), JsonLinesCodec::new(max_line_bytes));
        while let Some(line) = lines.next().await {
            let incoming = match line {
                Ok(Ok(message)) => Incoming::Message(message),
                Ok(Err(bad)) => Incoming::Malformed(bad),
                Err(err) => {
                    tracing::warn!("stdin: {err}");
                    break;
                }
            };
            if in_tx.send(incoming).await.is_err() {
                break;
            }
        }
    });
    let writer_queue = queue.clone();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::BufWriter::with_capacity(64 * 1024, tokio::io::stdout());
        while let Some(message) = next_for_client(&writer_queue).await {
            let Some(line) = message.line() else {
                continue;
            };
            let write = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                // A burst goes out in few writes; the last line of it is flushed at once.
                if !writer_queue.has_ready() {
                    stdout.flush().await?;
                }
                Ok::<(), std::io::Error>(())
            };
            if let Err(err) = write.await {
                tracing::debug!("stdout closed: {err}");
                break;
            }
        }
        if let Err(err) = stdout.flush().await {
            tracing::debug!("stdout closed: {err}");
        }
    });
    let outgoing = Arc::new(Outgoing::new(queue));
    serve(state, in_rx, outgoing.clone(), limits).await;
    reader.abort();
    outgoing.close();
    if tokio::time::timeout(DRAIN_TIMEOUT, writer).await.is_err() {
        tracing::warn!("stdout did not take the last answers within {DRAIN_TIMEOUT:?}");
    }
}
