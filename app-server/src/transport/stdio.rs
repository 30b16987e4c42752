//! JSON Lines over the process's stdin and stdout. stdout carries protocol only.

use std::sync::Arc;

use keel_protocol::{JsonRpcFraming, JsonRpcMessage};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::{INCOMING_CAPACITY, parse};
use crate::connection::{ConnectionLimits, OUTGOING_CAPACITY, serve};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// Serves one connection on stdio until stdin closes.
pub(crate) async fn serve_stdio(state: Arc<AppState>, limits: ConnectionLimits) {
    let (in_tx, in_rx) = mpsc::channel(INCOMING_CAPACITY);
    let (out_tx, mut out_rx) = mpsc::channel::<JsonRpcMessage>(OUTGOING_CAPACITY);
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) if line.trim().is_empty() => {}
                Ok(Some(line)) => {
                    if in_tx.send(parse(&line)).await.is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!("stdin: {err}");
                    break;
                }
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(message) = out_rx.recv().await {
            let line = match message.to_json(JsonRpcFraming::WithoutVersion) {
                Ok(line) => line,
                Err(err) => {
                    tracing::error!("cannot serialise an outgoing message: {err}");
                    continue;
                }
            };
            let write = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if let Err(err) = write.await {
                tracing::debug!("stdout closed: {err}");
                break;
            }
        }
    });
    serve(state, in_rx, Arc::new(Outgoing::new(out_tx)), limits).await;
    reader.abort();
    // Threads may still hold the outgoing side; give queued messages a moment to drain.
    let drain = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    if drain.is_err() {
        tracing::debug!("stdout writer still had senders at shutdown");
    }
}
