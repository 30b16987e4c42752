//! The stdio ends of the pipeline: the reader task turns lines into messages, the writer task
//! turns messages into lines. Nothing else touches stdin or stdout, so stdout carries protocol
//! only (logs go to stderr through `tracing`).

use keel_protocol::{JsonRpcFraming, JsonRpcMessage, RequestId};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::error::{McpServerError, Result};

/// Messages read but not yet processed. When full, the reader stops reading, so a client that
/// floods the server is slowed by its own pipe. Requests are handled quickly (long work runs
/// in tasks), so 128 is plenty.
pub(crate) const INCOMING_CAPACITY: usize = 128;

/// The longest line accepted; a longer one is skipped and answered with a parse error.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One unit of client input.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A well-formed JSON-RPC message.
    Message(JsonRpcMessage),
    /// A line that is not valid JSON-RPC, with the id when one could be read.
    Malformed {
        id: Option<RequestId>,
        code: i64,
        message: String,
    },
}

/// Reads newline-delimited JSON-RPC from `reader` until end of input.
pub(crate) async fn read_loop<R: AsyncRead + Unpin>(
    reader: R,
    tx: mpsc::Sender<Incoming>,
) -> Result<()> {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = u64::try_from(MAX_LINE_BYTES + 1).unwrap_or(u64::MAX);
        let read = (&mut reader)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await
            .map_err(McpServerError::Read)?;
        if read == 0 {
            return Ok(());
        }
        let incoming = if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            skip_rest_of_line(&mut reader).await?;
            Incoming::Malformed {
                id: None,
                code: keel_protocol::PARSE_ERROR,
                message: format!("message longer than {MAX_LINE_BYTES} bytes"),
            }
        } else {
            match parse_line(&line) {
                Some(incoming) => incoming,
                None => continue,
            }
        };
        if tx.send(incoming).await.is_err() {
            // The processor has stopped; nothing will read further input.
            return Ok(());
        }
    }
}

async fn skip_rest_of_line<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Result<()> {
    let mut scratch = Vec::new();
    loop {
        scratch.clear();
        let read = (&mut *reader)
            .take(64 * 1024)
            .read_until(b'\n', &mut scratch)
            .await
            .map_err(McpServerError::Read)?;
        if read == 0 || scratch.last() == Some(&b'\n') {
            return Ok(());
        }
    }
}

/// Classifies one line; `None` for a blank line.
fn parse_line(line: &[u8]) -> Option<Incoming> {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text.trim(),
        Err(err) => {
            return Some(Incoming::Malformed {
                id: None,
                code: keel_protocol::PARSE_ERROR,
                message: format!("message is not UTF-8: {err}"),
            });
        }
    };
    if text.is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(err) => {
            return Some(Incoming::Malformed {
                id: None,
                code: keel_protocol::PARSE_ERROR,
                message: format!("message is not JSON: {err}"),
            });
        }
    };
    Some(
        match serde_json::from_value::<JsonRpcMessage>(value.clone()) {
            Ok(message) => Incoming::Message(message),
            Err(err) => Incoming::Malformed {
                id: value
                    .get("id")
                    .and_then(|id| serde_json::from_value(id.clone()).ok()),
                code: keel_protocol::INVALID_REQUEST,
                message: format!("invalid JSON-RPC message: {err}"),
            },
        },
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_lines_are_skipped_and_garbage_is_classified() {
        assert!(parse_line(b"  \n").is_none());
        assert!(matches!(
            parse_line(b"{not json"),
            Some(Incoming::Malformed {
                code: keel_protocol::PARSE_ERROR,
                id: None,
                ..
            })
        ));
        assert!(matches!(
            parse_line(br#"{"id": 7, "params": {}}"#),
            Some(Incoming::Malformed {
                code: keel_protocol::INVALID_REQUEST,
                id: Some(RequestId::Integer(7)),
                ..
            })
        ));
        assert!(matches!(
            parse_line(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Some(Incoming::Message(JsonRpcMessage::Request(_)))
        ));
    }
}
