//! Reading rollout files with bounded memory: one line at a time through a reused buffer,
//! with each line's kind told from its first bytes, so lines nobody needs (history before the
//! last compaction, items a summary skips) are never parsed. A file of any size costs the
//! live history plus the longest line, not the file.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// A buffer grown past this by one long line is replaced once the line is read.
const KEPT_BUFFER_BYTES: usize = 1024 * 1024;
/// How far into a line its `"type"` is looked for (Keel and Codex write the timestamp, then
/// the type, first).
const KIND_WINDOW_BYTES: usize = 160;

/// What a rollout line holds, from its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    SessionMeta,
    ResponseItem,
    EventMsg,
    ThreadName,
    Rollback,
    Compacted,
    /// Anything else (another program's line types, a torn line).
    Other,
}

/// The kind of a rollout line, without parsing it.
pub(crate) fn line_kind(line: &[u8]) -> LineKind {
    const KEY: &[u8] = b"\"type\":\"";
    let window = &line[..line.len().min(KIND_WINDOW_BYTES)];
    let Some(at) = memchr::memmem::find(window, KEY) else {
        return LineKind::Other;
    };
    let rest = &line[at + KEY.len()..];
    let Some(end) = memchr::memchr(b'"', rest) else {
        return LineKind::Other;
    };
    match &rest[..end] {
        b"session_meta" => LineKind::SessionMeta,
        b"response_item" => LineKind::ResponseItem,
        b"event_msg" => LineKind::EventMsg,
        b"thread_name" => LineKind::ThreadName,
        b"rollback" => LineKind::Rollback,
        b"compacted" => LineKind::Compacted,
        _ => LineKind::Other,
    }
}

/// The lines of a rollout file, read one at a time.
pub(crate) struct RolloutLines {
    reader: BufReader<File>,
    buffer: Vec<u8>,
    /// 1-based number of the line last read.
    number: usize,
}

impl RolloutLines {
    pub(crate) fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Self {
            reader: BufReader::with_capacity(256 * 1024, File::open(path)?),
            buffer: Vec::new(),
            number: 0,
        })
    }

    /// The next non-empty line that `wanted` accepts, without its newline, with its 1-based
    /// number; `None` at the end of the file. `wanted` sees the line's number, kind and first
    /// bytes; a line it refuses is skipped without being held in memory.
    pub(crate) fn next_line_where(
        &mut self,
        mut wanted: impl FnMut(usize, LineKind, &[u8]) -> bool,
    ) -> std::io::Result<Option<(usize, &[u8])>> {
        loop {
            if self.buffer.capacity() > KEPT_BUFFER_BYTES {
                self.buffer = Vec::new();
            }
            self.buffer.clear();
            let (ended, at_eof) = self.read_head()?;
            if self.buffer.is_empty() && at_eof && !ended {
                return Ok(None);
            }
            self.number += 1;
            if self.buffer.iter().all(u8::is_ascii_whitespace) && ended {
                continue;
            }
            let kind = line_kind(&self.buffer);
            if !wanted(self.number, kind, &self.buffer) {
                if !ended {
                    self.skip_rest_of_line()?;
                }
                continue;
            }
            if !ended {
                self.reader.read_until(b'\n', &mut self.buffer)?;
            }
            while self
                .buffer
                .last()
                .is_some_and(|b| *b == b'\n' || *b == b'\r')
            {
                self.buffer.pop();
            }
            if self.buffer.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some((self.number, &self.buffer)));
        }
    }

    /// Every non-empty line, in turn.
    #[cfg(test)]
    fn next_line(&mut self) -> std::io::Result<Option<(usize, &[u8])>> {
        self.next_line_where(|_, _, _| true)
    }

    /// Reads up to [`KIND_WINDOW_BYTES`] of the next line into the buffer; returns whether
    /// the line ended (its newline consumed) and whether the file ended.
    fn read_head(&mut self) -> std::io::Result<(bool, bool)> {
        while self.buffer.len() < KIND_WINDOW_BYTES {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                return Ok((false, true));
            }
            let window = available.len().min(KIND_WINDOW_BYTES - self.buffer.len());
            if let Some(newline) = memchr::memchr(b'\n', &available[..window]) {
                self.buffer.extend_from_slice(&available[..newline]);
                self.reader.consume(newline + 1);
                return Ok((true, false));
            }
            self.buffer.extend_from_slice(&available[..window]);
            self.reader.consume(window);
        }
        Ok((false, false))
    }

    /// Consumes the rest of the current line without keeping it.
    fn skip_rest_of_line(&mut self) -> std::io::Result<()> {
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                return Ok(());
            }
            if let Some(newline) = memchr::memchr(b'\n', available) {
                self.reader.consume(newline + 1);
                return Ok(());
            }
            let all = available.len();
            self.reader.consume(all);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_first_bytes() {
        let line = br#"{"timestamp":"2026-11-23T00:00:00.000Z","type":"compacted","payload":{"message":"x"}}"#;
        assert_eq!(line_kind(line), LineKind::Compacted);
        let line = br#"{"timestamp":"t","type":"response_item","payload":{"type":"message"}}"#;
        assert_eq!(line_kind(line), LineKind::ResponseItem);
        assert_eq!(
            line_kind(br#"{"timestamp":"t","type":"turn_context"}"#),
            LineKind::Other
        );
        assert_eq!(line_kind(br#"{"timestamp":"t","ty"#), LineKind::Other);
    }

    #[test]
    fn lines_are_read_one_at_a_time_and_long_ones_give_memory_back() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("r.jsonl");
        let long = "y".repeat(3 * 1024 * 1024);
        std::fs::write(&path, format!("a\n\n{long}\nb\r\n"))?;
        let mut lines = RolloutLines::open(&path)?;
        assert_eq!(lines.next_line()?, Some((1, &b"a"[..])));
        assert_eq!(
            lines
                .next_line()?
                .map(|(number, line)| (number, line.len())),
            Some((3, long.len()))
        );
        assert_eq!(lines.next_line()?, Some((4, &b"b"[..])));
        assert!(lines.buffer.capacity() <= KEPT_BUFFER_BYTES);
        assert_eq!(lines.next_line()?, None);
        Ok(())
    }

    #[test]
    fn refused_lines_are_skipped_without_being_read_whole() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("r.jsonl");
        let huge = format!(
            "{{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":\"{}\"}}",
            "z".repeat(5 * 1024 * 1024)
        );
        let meta = r#"{"timestamp":"t","type":"session_meta","payload":{}}"#;
        std::fs::write(&path, format!("{huge}\n{meta}\n{huge}"))?;
        let mut lines = RolloutLines::open(&path)?;
        let mut seen = Vec::new();
        let found = lines.next_line_where(|number, kind, head| {
            seen.push((number, kind, head.len()));
            kind == LineKind::SessionMeta
        })?;
        assert_eq!(found, Some((2, meta.as_bytes())));
        assert_eq!(seen[0], (1, LineKind::ResponseItem, KIND_WINDOW_BYTES));
        assert!(lines.buffer.capacity() < 64 * 1024);
        assert_eq!(lines.next_line_where(|_, _, _| false)?, None);
        Ok(())
    }
}
