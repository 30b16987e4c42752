//! Where a process's output comes from and where its input goes: pipes read on the runtime,
//! a terminal read and written by dedicated threads (its I/O blocks). Output is cut into
//! chunks held in buffers lent by the connection's [`BufferPool`].

use std::io::{Read, Write};

use bytes::Bytes;
use keel_protocol::ExecSessionId;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use crate::buffers::BufferPool;

/// Largest chunk read from a pipe or PTY at once; one `outputDelta` carries at most this.
/// Large chunks amortise the per-message cost of bulk output.
pub(crate) const READ_CHUNK_BYTES: usize = 256 * 1024;

/// Idle read buffers a connection keeps for reuse (2 MiB): enough for a steady stream to
/// cycle through the same buffers, little to hold while nothing flows.
pub(crate) const IDLE_READ_BUFFERS: usize = 8;

/// Chunks between a PTY's blocking reader thread and its async pump. Full: the thread stops
/// reading the terminal, so the child blocks on its own writes (backpressure).
const PTY_READ_QUEUE_CHUNKS: usize = 4;

/// A source of output chunks for one stream.
pub(crate) enum OutputSource {
    /// A pipe, read on the runtime straight into a lent buffer.
    Pipe {
        pipe: Box<dyn AsyncRead + Send + Unpin>,
        buffers: BufferPool,
        /// The buffer the next read fills (empty capacity until the first read).
        buffer: Vec<u8>,
    },
    /// A terminal, read by a dedicated thread.
    Thread(mpsc::Receiver<Bytes>),
}

impl OutputSource {
    /// A pipe read on the runtime.
    pub(crate) fn pipe(pipe: Box<dyn AsyncRead + Send + Unpin>, buffers: BufferPool) -> Self {
        Self::Pipe {
            pipe,
            buffers,
            buffer: Vec::new(),
        }
    }

    /// A terminal read by a new thread that stops at end of file (or when this source is
    /// dropped).
    pub(crate) fn terminal(
        id: &ExecSessionId,
        reader: Box<dyn Read + Send>,
        buffers: BufferPool,
    ) -> Self {
        let (chunks, chunks_rx) = mpsc::channel(PTY_READ_QUEUE_CHUNKS);
        spawn_pty_reader(id, reader, chunks, buffers);
        Self::Thread(chunks_rx)
    }

    /// The next chunk; `None` at end of file.
    ///
    /// Cancel safe: a pending read or receive loses no data when dropped.
    pub(crate) async fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>> {
        match self {
            Self::Pipe {
                pipe,
                buffers,
                buffer,
            } => {
                if buffer.capacity() == 0 {
                    *buffer = buffers.take();
                }
                // Reads into the spare capacity, which the kernel fills: no zeroing.
                let read = pipe.read_buf(buffer).await?;
                if read == 0 {
                    return Ok(None);
                }
                Ok(Some(chunk_of(buffer, buffers)))
            }
            Self::Thread(rx) => Ok(rx.recv().await),
        }
    }
}

/// Hands over what `buffer` holds. A read that filled at least half of it lends the buffer
/// itself (a fresh one is taken for the next read); a smaller one is copied into a chunk of
/// its own size and the buffer is kept, so no chunk pins much more memory than it shows
/// (retained output keeps chunks around; see `RetainedOutput`).
fn chunk_of(buffer: &mut Vec<u8>, buffers: &BufferPool) -> Bytes {
    if buffer.len() < buffers.buffer_bytes() / 2 {
        let chunk = Bytes::copy_from_slice(buffer);
        buffer.clear();
        chunk
    } else {
        buffers.share(std::mem::take(buffer))
    }
}

/// Reads the PTY on a dedicated thread (the reads block) into a small bounded queue.
fn spawn_pty_reader(
    id: &ExecSessionId,
    mut reader: Box<dyn Read + Send>,
    chunks: mpsc::Sender<Bytes>,
    buffers: BufferPool,
) {
    let id = id.clone();
    let spawned = std::thread::Builder::new()
        .name("keel-pty-reader".to_string())
        .spawn(move || {
            // Safe code reads only into initialised memory, so this buffer is zeroed once and
            // each read is copied out of it.
            let mut read_buffer = vec![0u8; READ_CHUNK_BYTES];
            loop {
                match reader.read(&mut read_buffer) {
                    Ok(0) => break,
                    Ok(read) => {
                        let read = &read_buffer[..read];
                        let chunk = if read.len() < buffers.buffer_bytes() / 2 {
                            Bytes::copy_from_slice(read)
                        } else {
                            let mut buffer = buffers.take();
                            buffer.extend_from_slice(read);
                            buffers.share(buffer)
                        };
                        if chunks.blocking_send(chunk).is_err() {
                            break;
                        }
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                    // EIO: every terminal-side descriptor is closed, the PTY's end of file.
                    Err(_) => break,
                }
            }
            tracing::trace!(session = %id, "pty reader done");
        });
    if let Err(err) = spawned {
        tracing::error!(%err, "could not start the pty reader thread");
    }
}

/// Writes queued input to the PTY on a dedicated thread (the writes block). When the queue
/// closes, dropping the writer sends end-of-file to the terminal (newline, then VEOF).
pub(crate) fn spawn_pty_writer(
    id: &ExecSessionId,
    mut writer: Box<dyn Write + Send>,
    mut chunks: mpsc::Receiver<Vec<u8>>,
) {
    let id = id.clone();
    let spawned = std::thread::Builder::new()
        .name("keel-pty-writer".to_string())
        .spawn(move || {
            while let Some(chunk) = chunks.blocking_recv() {
                if let Err(err) = writer.write_all(&chunk).and_then(|()| writer.flush()) {
                    tracing::debug!(session = %id, %err, "pty write failed");
                    break;
                }
            }
        });
    if let Err(err) = spawned {
        tracing::error!(%err, "could not start the pty writer thread");
    }
}
