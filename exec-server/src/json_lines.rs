//! The JSON-lines decoder every Keel stdio server and client reads with: one JSON-RPC message
//! per line, a line limit enforced without ever holding more than the limit, and every bad
//! line turned into a [`FrameError`] item (answered by the caller, the stream going on) rather
//! than an error that ends the connection. What counts as bad, and its error code, is
//! [`keel_protocol::decode_frame`]'s decision.

use bytes::BytesMut;
use keel_protocol::{DEFAULT_MAX_LINE_BYTES, FrameError, JsonRpcMessage, decode_frame};
use tokio_util::codec::Decoder;

/// Capacity above which an emptied read buffer is replaced by a new, small one.
const KEPT_BUFFER_BYTES: usize = 1024 * 1024;

/// Capacity of such a new buffer: what a reader fills per read (a buffer with no room left
/// would make the reader grow it a few bytes at a time).
const FRESH_BUFFER_BYTES: usize = 64 * 1024;

/// One decoded line: a message, or why the line is not one.
pub type JsonLine = Result<JsonRpcMessage, FrameError>;

/// A `tokio_util` decoder of newline-delimited JSON-RPC (`\n` or `\r\n`); blank lines are
/// skipped, and a last line without a newline still counts at end of input.
#[derive(Debug, Clone)]
pub struct JsonLinesCodec {
    max_line_bytes: usize,
    /// Bytes at the front of the buffer already searched for a newline.
    scanned: usize,
    /// Inside a line longer than the limit: its bytes are dropped until its newline.
    discarding: bool,
}

impl Default for JsonLinesCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl JsonLinesCodec {
    /// A decoder accepting lines of up to `max_line_bytes` (newline excluded).
    pub fn new(max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            scanned: 0,
            discarding: false,
        }
    }

    fn too_long(&self) -> JsonLine {
        Err(FrameError::TooLong {
            limit: self.max_line_bytes,
        })
    }
}

impl Decoder for JsonLinesCodec {
    type Item = JsonLine;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<JsonLine>, std::io::Error> {
        loop {
            let Some(offset) = memchr::memchr(b'\n', &buf[self.scanned..]) else {
                if self.discarding {
                    // More of a line already known to be too long: dropped as it arrives.
                    buf.clear();
                } else if buf.len() > self.max_line_bytes {
                    // Too long already: forget it rather than keep growing the buffer, and
                    // give the buffer's memory back (reads would walk through all of it).
                    *buf = BytesMut::with_capacity(FRESH_BUFFER_BYTES);
                    self.discarding = true;
                }
                self.scanned = buf.len();
                return Ok(None);
            };
            let end = self.scanned + offset;
            let line = buf.split_to(end + 1);
            self.scanned = 0;
            if buf.is_empty() && buf.capacity() > KEPT_BUFFER_BYTES {
                // After an unusually large line, start again small.
                *buf = BytesMut::with_capacity(FRESH_BUFFER_BYTES);
            }
            if std::mem::take(&mut self.discarding) || end > self.max_line_bytes {
                return Ok(Some(self.too_long()));
            }
            match decode_frame(&line[..end]) {
                Ok(None) => continue,
                Ok(Some(message)) => return Ok(Some(Ok(message))),
                Err(err) => return Ok(Some(Err(err))),
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<JsonLine>, std::io::Error> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        self.scanned = 0;
        if std::mem::take(&mut self.discarding) {
            buf.clear();
            return Ok(Some(self.too_long()));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let line = buf.split();
        Ok(decode_frame(&line).transpose())
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use keel_protocol::{INVALID_REQUEST, PARSE_ERROR};
    use pretty_assertions::assert_eq;
    use tokio_util::codec::FramedRead;

    use super::*;

    /// Decodes `input` fed in `chunk`-byte reads; each item as `ok:method` or `err:code`.
    async fn decode_all(input: &[u8], chunk: usize, limit: usize) -> Vec<String> {
        let reader = tokio_test_reader(input, chunk);
        FramedRead::new(reader, JsonLinesCodec::new(limit))
            .map(|item| match item {
                Ok(Ok(JsonRpcMessage::Request(request))) => format!("ok:{}", request.method),
                Ok(Ok(other)) => format!("ok:{other:?}"),
                Ok(Err(err)) => format!("err:{}", err.code()),
                Err(err) => format!("io:{err}"),
            })
            .collect()
            .await
    }

    /// A reader handing out `input` `chunk` bytes at a time.
    fn tokio_test_reader(input: &[u8], chunk: usize) -> impl tokio::io::AsyncRead + Unpin {
        let chunks: Vec<std::io::Result<bytes::Bytes>> = input
            .chunks(chunk)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        tokio_util::io::StreamReader::new(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn good_and_bad_lines_alike_keep_the_stream_going() {
        let input = b"{\"id\":1,\"method\":\"a\"}\n\n\xff\xfe\n[]\r\n{\"id\":2,\"method\":\"b\"}\r\n{\"id\":3,\"method\":\"c\"}";
        for chunk in [1, 3, 1024] {
            assert_eq!(
                decode_all(input, chunk, 1024).await,
                [
                    "ok:a".to_string(),
                    format!("err:{PARSE_ERROR}"),
                    format!("err:{INVALID_REQUEST}"),
                    "ok:b".to_string(),
                    "ok:c".to_string(),
                ],
                "chunk {chunk}"
            );
        }
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_without_being_kept() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"id\":1,\"method\":\"before\"}\n");
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend_from_slice(b"\n{\"id\":2,\"method\":\"after\"}\n");
        input.extend(std::iter::repeat_n(b'y', 10_000));
        for chunk in [7, 4096] {
            assert_eq!(
                decode_all(&input, chunk, 100).await,
                [
                    "ok:before".to_string(),
                    format!("err:{PARSE_ERROR}"),
                    "ok:after".to_string(),
                    format!("err:{PARSE_ERROR}"),
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn the_buffer_never_holds_much_more_than_the_limit() -> std::io::Result<()> {
        let mut codec = JsonLinesCodec::new(100);
        let mut buf = BytesMut::new();
        for _ in 0..1000 {
            buf.extend_from_slice(&[b'z'; 64]);
            assert_eq!(codec.decode(&mut buf)?, None);
            assert!(buf.len() <= 164, "{}", buf.len());
        }
        buf.extend_from_slice(b"\n");
        assert!(matches!(
            codec.decode(&mut buf)?,
            Some(Err(FrameError::TooLong { limit: 100 }))
        ));
        Ok(())
    }

    /// Memory that held an over-long line (or a large legitimate one) is given back: reads
    /// into a big emptied buffer would otherwise touch every page of it over time.
    #[test]
    fn a_large_buffer_is_replaced_once_emptied() -> std::io::Result<()> {
        let limit = 4 * KEPT_BUFFER_BYTES;
        let mut codec = JsonLinesCodec::new(limit);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&vec![b'z'; limit + 1]);
        assert_eq!(codec.decode(&mut buf)?, None);
        assert!(buf.capacity() <= FRESH_BUFFER_BYTES, "{}", buf.capacity());
        buf.extend_from_slice(b"zz\n{\"method\":\"a\"}\n");
        assert!(matches!(
            codec.decode(&mut buf)?,
            Some(Err(FrameError::TooLong { .. }))
        ));
        assert!(matches!(codec.decode(&mut buf)?, Some(Ok(_))));

        let big = format!("{{\"method\":\"{}\"}}\n", "m".repeat(2 * KEPT_BUFFER_BYTES));
        buf.extend_from_slice(big.as_bytes());
        assert!(matches!(codec.decode(&mut buf)?, Some(Ok(_))));
        assert!(buf.capacity() <= FRESH_BUFFER_BYTES, "{}", buf.capacity());
        Ok(())
    }
}
