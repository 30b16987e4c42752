//! Newline-delimited JSON over a byte stream: async tasks for any `AsyncRead`/`AsyncWrite`,
//! and blocking threads for the server's own stdin/stdout.

use std::io::{BufRead, Write};

use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::mpsc;

use super::{Frame, MAX_MESSAGE_BYTES};

/// Buffer size of line readers and writers; large so bulk output moves in few syscalls.
const IO_BUFFER_BYTES: usize = 256 * 1024;

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
pub(crate) async fn read_lines<R: AsyncRead + Unpin>(reader: R, frames: mpsc::Sender<Frame>) {
    let mut reader = BufReader::with_capacity(IO_BUFFER_BYTES, reader);
    // Sized like the previous line: bulk output arrives as runs of similar large lines, and
    // growing a fresh buffer by doubling would copy each one several times.
    let mut capacity = 0;
    loop {
        let mut line = Vec::with_capacity(capacity);
        let limit = (MAX_MESSAGE_BYTES + 1) as u64;
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(err) => {
                tracing::debug!(%err, "read failed; closing");
                return;
            }
        }
        capacity = line.len().min(MAX_MESSAGE_BYTES);
        let Some(frame) = frame_line(line) else {
            continue;
        };
        let last = matches!(frame, Frame::Invalid(_));
        if frames.send(frame).await.is_err() || last {
            return;
        }
    }
}

/// Writes each message as one line, flushing whenever the queue runs empty.
pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
    mut messages: mpsc::Receiver<String>,
    writer: W,
) {
    let mut writer = BufWriter::with_capacity(IO_BUFFER_BYTES, writer);
    while let Some(message) = messages.recv().await {
        let written = async {
            writer.write_all(message.as_bytes()).await?;
            writer.write_all(b"\n").await?;
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
    while let Some(message) = messages.blocking_recv() {
        let written = writer
            .write_all(message.as_bytes())
            .and_then(|()| writer.write_all(b"\n"))
            .and_then(|()| {
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
