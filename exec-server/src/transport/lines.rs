//! Newline-delimited JSON over a byte stream: async tasks for any `AsyncRead`/`AsyncWrite`,
//! and blocking threads for the server's own stdin/stdout.

use std::io::{BufRead, Write};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use super::{Frame, MAX_MESSAGE_BYTES};

/// Buffer size of line writers and of the server's stdin reader; large so bulk output moves
/// in few syscalls.
const IO_BUFFER_BYTES: usize = 256 * 1024;

/// Free space the client's line reader makes before each read: as much as a 1 MiB pipe
/// buffer holds, so one `read` can drain it.
const READ_BUFFER_BYTES: usize = 1024 * 1024;

/// Turns one raw line (newline included, if any) into a frame; `None` for a blank line.
fn frame_line(mut line: Vec<u8>) -> Option<Frame> {
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    } else if line.len() > MAX_MESSAGE_BYTES {
        return Some(Frame::Invalid(format!(
            "message longer than {MAX_MESSAGE_BYTES} bytes"
        )));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match String::from_utf8(line) {
        Ok(text) => Frame::Text(text),
        Err(_) => Frame::Invalid("message is not valid UTF-8".to_string()),
    })
}

/// Reads lines until end of file, a read error, an invalid frame, or the receiver is gone.
///
/// Lines are cut out of one growing buffer without copying and handed over as
/// [`Frame::Line`]; UTF-8 is left to the receiver, which checks it only for lines that are
/// not output notifications (those are validated by their base64 decoding).
pub(crate) async fn read_lines<R: AsyncRead + Unpin>(mut reader: R, frames: mpsc::Sender<Frame>) {
    let mut buf = BytesMut::with_capacity(READ_BUFFER_BYTES);
    // Bytes at the start of `buf` already searched for a newline.
    let mut scanned = 0;
    loop {
        if let Some(newline) = memchr::memchr(b'\n', &buf[scanned..]) {
            let length = scanned + newline;
            if length > MAX_MESSAGE_BYTES {
                break;
            }
            let line = buf.split_to(length + 1);
            scanned = 0;
            if let Some(frame) = frame_bytes(line)
                && frames.send(frame).await.is_err()
            {
                return;
            }
            continue;
        }
        scanned = buf.len();
        if scanned > MAX_MESSAGE_BYTES {
            break;
        }
        // Lines already handed over may still share the buffer; `reserve` then moves the
        // partial line into a fresh one rather than waiting for them.
        buf.reserve(READ_BUFFER_BYTES);
        match reader.read_buf(&mut buf).await {
            Ok(0) => {
                if let Some(frame) = frame_bytes(buf.split())
                    && frames.send(frame).await.is_err()
                {
                    tracing::debug!("frame receiver gone");
                }
                return;
            }
            Ok(_) => {}
            Err(err) => {
                tracing::debug!(%err, "read failed; closing");
                return;
            }
        }
    }
    let reason = format!("message longer than {MAX_MESSAGE_BYTES} bytes");
    if frames.send(Frame::Invalid(reason)).await.is_err() {
        tracing::debug!("frame receiver gone");
    }
}

/// Turns one raw line (newline included, if any) into a [`Frame::Line`]; `None` for a blank
/// line.
fn frame_bytes(mut line: BytesMut) -> Option<Frame> {
    if line.last() == Some(&b'\n') {
        line.truncate(line.len() - 1);
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(Frame::Line(line.freeze()))
}

/// Writes each message as one line, flushing whenever the queue runs empty.
pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
    mut messages: mpsc::Receiver<String>,
    writer: W,
) {
    let mut writer = BufWriter::with_capacity(IO_BUFFER_BYTES, writer);
    while let Some(mut message) = messages.recv().await {
        let written = async {
            // One write per message: a large one then bypasses the buffer in a single call.
            message.push('\n');
            writer.write_all(message.as_bytes()).await?;
            if messages.is_empty() {
                writer.flush().await?;
            }
            std::io::Result::Ok(())
        };
        if let Err(err) = written.await {
            tracing::debug!(%err, "write failed; closing");
            return;
        }
    }
    if let Err(err) = writer.shutdown().await {
        tracing::debug!(%err, "closing the writer failed");
    }
}

/// Blocking twin of [`read_lines`] for the process's own stdin, on a dedicated thread: a
/// blocking read there cannot hold up runtime shutdown.
pub(crate) fn read_lines_blocking(reader: impl BufRead, frames: mpsc::Sender<Frame>) {
    let mut reader = reader;
    loop {
        let mut line = Vec::new();
        let limit = (MAX_MESSAGE_BYTES + 1) as u64;
        match std::io::Read::take(&mut reader, limit).read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(err) => {
                tracing::debug!(%err, "read failed; closing");
                return;
            }
        }
        let Some(frame) = frame_line(line) else {
            continue;
        };
        let last = matches!(frame, Frame::Invalid(_));
        if frames.blocking_send(frame).is_err() || last {
            return;
        }
    }
}

/// Blocking twin of [`write_lines`] for the process's own stdout.
pub(crate) fn write_lines_blocking(mut messages: mpsc::Receiver<String>, writer: impl Write) {
    let mut writer = std::io::BufWriter::with_capacity(IO_BUFFER_BYTES, writer);
    while let Some(mut message) = messages.blocking_recv() {
        // Output lines leave room for this newline (see `codec`), so pushing it does not
        // reallocate, and a large line then goes out in one `write` bypassing the buffer.
        message.push('\n');
        let written = writer.write_all(message.as_bytes()).and_then(|()| {
            if messages.is_empty() {
                writer.flush()
            } else {
                Ok(())
            }
        });
        if let Err(err) = written {
            tracing::debug!(%err, "write failed; closing");
            return;
        }
    }
    if let Err(err) = writer.flush() {
        tracing::debug!(%err, "final flush failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Runs [`read_lines`] over `input` and collects what it hands over.
    async fn frames(input: &[u8]) -> Vec<String> {
        let (tx, mut rx) = mpsc::channel(4);
        let reader = tokio::spawn(read_lines(std::io::Cursor::new(input.to_vec()), tx));
        let mut out = Vec::new();
        while let Some(frame) = rx.recv().await {
            out.push(match frame {
                Frame::Line(line) => String::from_utf8_lossy(&line).into_owned(),
                Frame::Text(text) => format!("text:{text}"),
                Frame::Invalid(reason) => format!("invalid:{reason}"),
            });
        }
        reader.await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_are_cut_at_newlines_across_reads() {
        let long = "x".repeat(3 * READ_BUFFER_BYTES + 5);
        let input = format!("a\r\n\n  \nb\n{long}\nlast");
        assert_eq!(
            frames(input.as_bytes()).await,
            vec!["a".to_string(), "b".to_string(), long, "last".to_string()]
        );
    }

    #[tokio::test]
    async fn bytes_are_handed_over_unchecked() {
        assert_eq!(frames(b"\xff\n").await, vec!["\u{fffd}".to_string()]);
    }
}
