//! Retained output for `command/exec/snapshot`: the first and the last bytes of a stream,
//! within a fixed cap, so polling a chatty process never grows memory.
//!
//! The head is copied once (it fills up and then never changes). The tail keeps the chunks
//! themselves, shared with the live stream, so bulk output is not copied a second time;
//! chunks are only sliced as they age out.

use std::collections::VecDeque;

use bytes::Bytes;

/// The head and tail of one output stream, capped at `cap` bytes in total.
///
/// Tail chunks share their buffers with the stream, so the memory they pin can exceed the
/// bytes they show. Every chunk the output pumps produce fills at least half of its buffer
/// (smaller reads are copied into a buffer of their own size), and a small end of a large
/// chunk is copied here, so the tail pins at most about twice its cap plus one buffer.
#[derive(Debug)]
pub(crate) struct RetainedOutput {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<Bytes>,
    /// Bytes in `tail`.
    tail_len: usize,
    truncated: bool,
}

impl RetainedOutput {
    /// Keeps at most `cap` bytes: half from the start of the stream, half from its end.
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head_cap,
            tail_cap: cap - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            tail_len: 0,
            truncated: false,
        }
    }

    /// Appends a chunk, dropping bytes from the middle when over the cap.
    pub(crate) fn push(&mut self, chunk: &Bytes) {
        let room = self.head_cap - self.head.len();
        let taken = room.min(chunk.len());
        if taken > 0 {
            self.head.extend_from_slice(&chunk[..taken]);
        }
        let rest = &chunk[taken..];
        if rest.is_empty() || self.tail_cap == 0 {
            self.truncated |= !rest.is_empty();
            return;
        }
        let kept = rest.len().min(self.tail_cap);
        let start = chunk.len() - kept;
        // A small end of a large chunk is copied rather than pinning the whole buffer.
        self.tail.push_back(if kept < chunk.len() / 2 {
            Bytes::copy_from_slice(&chunk[start..])
        } else {
            chunk.slice(start..)
        });
        self.tail_len += kept;
        self.truncated |= kept < rest.len();
        while self.tail_len > self.tail_cap {
            self.truncated = true;
            let overflow = self.tail_len - self.tail_cap;
            let Some(oldest) = self.tail.front_mut() else {
                break;
            };
            if oldest.len() <= overflow {
                self.tail_len -= oldest.len();
                self.tail.pop_front();
            } else {
                bytes::Buf::advance(oldest, overflow);
                self.tail_len -= overflow;
            }
        }
    }

    /// `true` once any byte was dropped.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }

    /// The retained bytes: head followed by tail.
    pub(crate) fn contents(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + self.tail_len);
        out.extend_from_slice(&self.head);
        for chunk in &self.tail {
            out.extend_from_slice(chunk);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut retained = RetainedOutput::new(10);
        retained.push(&Bytes::from_static(b"abc"));
        retained.push(&Bytes::from_static(b"defgh"));
        assert_eq!(retained.contents(), b"abcdefgh".to_vec());
        assert!(!retained.truncated());
    }

    #[test]
    fn keeps_head_and_tail_when_over_the_cap() {
        let mut retained = RetainedOutput::new(6);
        for byte in b"0123456789" {
            retained.push(&Bytes::copy_from_slice(&[*byte]));
        }
        assert_eq!(retained.contents(), b"012789".to_vec());
        assert!(retained.truncated());

        let mut big = RetainedOutput::new(6);
        big.push(&Bytes::from_static(b"0123456789"));
        assert_eq!(big.contents(), b"012789".to_vec());
        assert!(big.truncated());
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut retained = RetainedOutput::new(6);
        retained.push(&Bytes::from_static(b"012345"));
        assert_eq!(retained.contents(), b"012345".to_vec());
        assert!(!retained.truncated());
    }

    #[test]
    fn matches_a_byte_by_byte_model() {
        // Chunk sizes that straddle the head, fill the tail exactly, and overflow it.
        let stream: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        for cap in [0, 1, 7, 64, 1000, 6000] {
            for sizes in [&[1usize][..], &[3, 500, 1], &[64], &[999, 2, 4000]] {
                let mut retained = RetainedOutput::new(cap);
                let mut offset = 0;
                for size in sizes.iter().cycle() {
                    if offset == stream.len() {
                        break;
                    }
                    let end = (offset + size).min(stream.len());
                    retained.push(&Bytes::copy_from_slice(&stream[offset..end]));
                    offset = end;
                }
                let head = cap / 2;
                let tail = cap - head;
                let expected: Vec<u8> = if stream.len() <= cap {
                    stream.clone()
                } else {
                    [&stream[..head], &stream[stream.len() - tail..]].concat()
                };
                assert_eq!(retained.contents(), expected, "cap {cap}, sizes {sizes:?}");
                assert_eq!(retained.truncated(), stream.len() > cap);
                assert!(retained.tail.iter().map(Bytes::len).sum::<usize>() <= tail);
            }
        }
    }
}
