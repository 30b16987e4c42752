//! Newline-delimited JSON over a byte stream: async tasks for any `AsyncRead`/`AsyncWrite`,
//! and blocking threads for the server's own stdin/stdout.

use std::io::{Read, Write};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;

use super::{Frame, MAX_MESSAGE_BYTES, Outgoing};
use crate::buffers::BufferPool;
use crate::codec::{
    DECODED_CHUNK_BYTES, IDLE_DECODE_BUFFERS, append_event, decode_output_delta_line,
};
use crate::json_lines::JsonLinesCodec;

/// Batch size of line writers (a larger batch is written at once) and buffer size of the
/// server's stdin reader; large so bulk output moves in few syscalls.
const IO_BUFFER_BYTES: usize = 256 * 1024;

/// Bytes the server's stdin reader asks for per read: requests are small, and a larger
/// request only takes a few more reads.
const STDIN_READ_BYTES: usize = 64 * 1024;

/// Capacity a line writer's buffer shrinks back to after a larger message: room for the
/// largest output line plus small messages.
const MAX_KEPT_WRITE_BUFFER_BYTES: usize = 1024 * 1024;

/// Free space the client's line reader makes before each read: as much as a 1 MiB pipe
/// buffer holds, so one `read` can drain it.
const READ_BUFFER_BYTES: usize = 1024 * 1024;

/// Capacity above which the client's read buffer is dropped once it is empty (it grew for
/// a message much larger than output lines).
const MAX_KEPT_READ_BUFFER_BYTES: usize = 8 * READ_BUFFER_BYTES;

/// Reads lines until end of file, a read error, an invalid frame, or the receiver is gone.
///
/// This is the client's reader, and it carries almost every byte the client receives: the
/// server's output notifications. Lines are cut out of one reused buffer; output lines are
/// decoded right there (while the bytes are still in cache) into buffers from a pool, and
/// handed over as [`Frame::Event`]; any other line is copied out as a [`Frame::Line`], its
/// UTF-8 left to the receiver. The buffer is never shared, so it is never reallocated for
/// ordinary traffic.
pub(crate) async fn read_lines<R: AsyncRead + Unpin>(mut reader: R, frames: mpsc::Sender<Frame>) {
    let decoded = BufferPool::new(DECODED_CHUNK_BYTES, IDLE_DECODE_BUFFERS);
    let mut buf: Vec<u8> = Vec::with_capacity(2 * READ_BUFFER_BYTES);
    // Start of the first line not yet handed over.
    let mut start = 0;
    // Bytes after `start` already searched for a newline.
    let mut scanned = 0;
    loop {
        while let Some(newline) = memchr::memchr(b'\n', &buf[start + scanned..]) {
            let end = start + scanned + newline;
            if end - start > MAX_MESSAGE_BYTES {
                return too_long(&frames).await;
            }
            let frame = frame_of(&buf[start..end], &decoded);
            start = end + 1;
            scanned = 0;
            if let Some(frame) = frame
                && frames.send(frame).await.is_err()
            {
                return;
            }
        }
        scanned = buf.len() - start;
        if scanned > MAX_MESSAGE_BYTES {
            return too_long(&frames).await;
        }
        if buf.capacity() - buf.len() < READ_BUFFER_BYTES {
            // Move the partial line to the front (at most one line is ever moved).
            buf.drain(..start);
            start = 0;
            buf.reserve(READ_BUFFER_BYTES);
        }
        match reader.read_buf(&mut buf).await {
            Ok(0) => {
                if let Some(frame) = frame_of(&buf[start..], &decoded)
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
        // After a message far larger than usual, give the memory back.
        if start == buf.len() && buf.capacity() > MAX_KEPT_READ_BUFFER_BYTES {
            buf = Vec::with_capacity(2 * READ_BUFFER_BYTES);
            start = 0;
            scanned = 0;
        }
    }
}

/// Reports a line over [`MAX_MESSAGE_BYTES`], which ends the connection.
async fn too_long(frames: &mpsc::Sender<Frame>) {
    let reason = format!("message longer than {MAX_MESSAGE_BYTES} bytes");
    if frames.send(Frame::Invalid(reason)).await.is_err() {
        tracing::debug!("frame receiver gone");
    }
}

/// Turns one line (without its newline) into a frame; `None` for a blank line.
fn frame_of(line: &[u8], decoded: &BufferPool) -> Option<Frame> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if let Some(event) = decode_output_delta_line(line, decoded) {
        return Some(Frame::Event(event));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(Frame::Line(Bytes::copy_from_slice(line)))
}

/// Writes each message as one line (see [`LineBatch`]), then shuts the writer down.
pub(crate) async fn write_lines<M, W>(mut messages: mpsc::Receiver<M>, mut writer: W)
where
    M: Into<Outgoing>,
    W: AsyncWrite + Unpin,
{
    let mut batch = LineBatch::new();
    while let Some(message) = messages.recv().await {
        if !batch.push(message.into()) || !batch.ready(messages.is_empty()) {
            continue;
        }
        if let Err(err) = writer.write_all(batch.bytes()).await {
            tracing::debug!(%err, "write failed; closing");
            return;
        }
        batch.written();
    }
    if let Err(err) = writer.shutdown().await {
        tracing::debug!(%err, "closing the writer failed");
    }
}

/// Lines waiting to be written, in one reused buffer: output events are encoded straight
/// into it, so a bulk output line costs no allocation, and small messages are coalesced.
/// The buffer is written out when it holds [`IO_BUFFER_BYTES`] or the queue runs empty.
struct LineBatch {
    pending: Vec<u8>,
}

impl LineBatch {
    fn new() -> Self {
        Self {
            pending: Vec::with_capacity(IO_BUFFER_BYTES),
        }
    }

    /// Appends a message and its newline; `false` if it could not be encoded (logged and
    /// skipped).
    fn push(&mut self, message: Outgoing) -> bool {
        match message {
            Outgoing::Text(text) => self.pending.extend_from_slice(text.as_bytes()),
            Outgoing::Event(event) => {
                if let Err(err) = append_event(&event, &mut self.pending) {
                    tracing::error!(%err, "could not encode an event");
                    return false;
                }
                // Dropping the event here returns its chunk's buffer before the write waits.
                drop(event);
            }
        }
        self.pending.push(b'\n');
        true
    }

    /// Whether to write now, given whether more messages are queued.
    fn ready(&self, queue_empty: bool) -> bool {
        queue_empty || self.pending.len() >= IO_BUFFER_BYTES
    }

    fn bytes(&self) -> &[u8] {
        &self.pending
    }

    /// Empties the batch after a write.
    fn written(&mut self) {
        self.pending.clear();
        // One unusually large message (a big snapshot) must not keep its buffer forever.
        self.pending.shrink_to(MAX_KEPT_WRITE_BUFFER_BYTES);
    }
}

/// Blocking twin of [`read_lines`] for the process's own stdin, on a dedicated thread: a
/// blocking read there cannot hold up runtime shutdown. This is the server's reader, so it
/// cuts lines with [`JsonLinesCodec`], the decoder every Keel server reads with: a line that is
/// too long, not UTF-8 or not a message is handed over as [`Frame::Rejected`] for the
/// processor to answer, and the connection goes on.
pub(crate) fn read_lines_blocking(mut reader: impl Read, frames: mpsc::Sender<Frame>) {
    let mut codec = JsonLinesCodec::new(MAX_MESSAGE_BYTES);
    let mut buf = BytesMut::with_capacity(STDIN_READ_BYTES);
    let mut at_end = false;
    loop {
        let decoded = if at_end {
            codec.decode_eof(&mut buf)
        } else {
            codec.decode(&mut buf)
        };
        let line = match decoded {
            Ok(Some(line)) => line,
            Ok(None) if at_end => return,
            Ok(None) => {
                // Read more, into a zeroed tail (cheap at this size) that keeps only what came.
                let filled = buf.len();
                buf.resize(filled + STDIN_READ_BYTES, 0);
                match reader.read(&mut buf[filled..]) {
                    Ok(read) => {
                        buf.truncate(filled + read);
                        at_end = read == 0;
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {
                        buf.truncate(filled);
                    }
                    Err(err) => {
                        tracing::debug!(%err, "read failed; closing");
                        return;
                    }
                }
                continue;
            }
            Err(err) => {
                tracing::debug!(%err, "read failed; closing");
                return;
            }
        };
        let frame = match line {
            Ok(message) => Frame::Message(message),
            Err(bad) => Frame::Rejected(bad),
        };
        if frames.blocking_send(frame).is_err() {
            return;
        }
    }
}

/// Blocking twin of [`write_lines`], for the process's own stdout.
pub(crate) fn write_lines_blocking(mut messages: mpsc::Receiver<Outgoing>, mut writer: impl Write) {
    let mut batch = LineBatch::new();
    while let Some(message) = messages.blocking_recv() {
        if !batch.push(message) || !batch.ready(messages.is_empty()) {
            continue;
        }
        if let Err(err) = writer
            .write_all(batch.bytes())
            .and_then(|()| writer.flush())
        {
            tracing::debug!(%err, "write failed; closing");
            return;
        }
        batch.written();
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
                Frame::Rejected(bad) => format!("rejected:{bad}"),
                Frame::Message(message) => format!("message:{message:?}"),
                Frame::Event(event) => format!("event:{event:?}"),
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

    #[tokio::test]
    async fn output_lines_are_decoded_by_the_reader() {
        use keel_protocol::ExecSessionId;
        use keel_protocol::exec_server::ExecOutputStream;

        use crate::codec::encode_event;
        use crate::event::ExecServerEvent;

        let events: Vec<ExecServerEvent> = [1, DECODED_CHUNK_BYTES, 300_000, 0, 77]
            .into_iter()
            .enumerate()
            .map(|(n, size)| ExecServerEvent::Output {
                session_id: ExecSessionId::new(format!("session-{n}")),
                stream: ExecOutputStream::Stdout,
                chunk: (0..size).map(|byte| (byte * 7 + n) as u8).collect(),
            })
            .collect();
        let mut input = Vec::new();
        for event in &events {
            input.extend_from_slice(encode_event(event).unwrap().as_bytes());
            input.extend_from_slice(b"\r\n{\"id\":1,\"result\":{}}\n");
        }
        // Delivered in pieces that cut lines anywhere.
        let (mut writer, reader) = tokio::io::duplex(64 * 1024);
        let feed = tokio::spawn(async move {
            for piece in input.chunks(100_003) {
                tokio::io::AsyncWriteExt::write_all(&mut writer, piece).await?;
            }
            std::io::Result::Ok(())
        });
        let (tx, mut rx) = mpsc::channel(4);
        let reading = tokio::spawn(read_lines(reader, tx));
        for event in events {
            match rx.recv().await {
                Some(Frame::Event(decoded)) => assert_eq!(decoded, event),
                other => panic!("expected an event, got {other:?}"),
            }
            match rx.recv().await {
                Some(Frame::Line(line)) => assert_eq!(&line[..], br#"{"id":1,"result":{}}"#),
                other => panic!("expected a line, got {other:?}"),
            }
        }
        feed.await.unwrap().unwrap();
        assert!(rx.recv().await.is_none());
        reading.await.unwrap();
    }
}
