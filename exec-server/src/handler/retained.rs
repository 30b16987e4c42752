//! Retained output for `command/exec/snapshot`: the first and the last bytes of a stream,
//! within a fixed cap, so polling a chatty process never grows memory.

use std::collections::VecDeque;

/// The head and tail of one output stream, capped at `cap` bytes in total.
#[derive(Debug)]
pub(crate) struct RetainedOutput {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
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
            truncated: false,
        }
    }

    /// Appends a chunk, dropping bytes from the middle when over the cap.
    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let taken = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..taken]);
            chunk = &chunk[taken..];
        }
        if chunk.is_empty() {
            return;
        }
        if chunk.len() >= self.tail_cap {
            self.truncated |= !self.tail.is_empty() || chunk.len() > self.tail_cap;
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
        if overflow > 0 {
            self.truncated = true;
            self.tail.drain(..overflow);
        }
        self.tail.extend(chunk);
    }

    /// `true` once any byte was dropped.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }

    /// The retained bytes: head followed by tail.
    pub(crate) fn contents(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + self.tail.len());
        out.extend_from_slice(&self.head);
        out.extend(self.tail.iter());
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
        retained.push(b"abc");
        retained.push(b"defgh");
        assert_eq!(retained.contents(), b"abcdefgh".to_vec());
        assert!(!retained.truncated());
    }

    #[test]
    fn keeps_head_and_tail_when_over_the_cap() {
        let mut retained = RetainedOutput::new(6);
        for byte in b"0123456789" {
            retained.push(&[*byte]);
        }
        assert_eq!(retained.contents(), b"012789".to_vec());
        assert!(retained.truncated());

        let mut big = RetainedOutput::new(6);
        big.push(b"0123456789");
        assert_eq!(big.contents(), b"012789".to_vec());
        assert!(big.truncated());
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut retained = RetainedOutput::new(6);
        retained.push(b"012345");
        assert_eq!(retained.contents(), b"012345".to_vec());
        assert!(!retained.truncated());
    }
}
