//! Bounded capture of process output: keeps the head and the tail, drops the middle, so memory
//! stays fixed however much a command prints.

/// Keeps at most `head_cap + tail_cap` bytes of a byte stream, remembering how much was dropped.
#[derive(Debug, Clone)]
pub struct HeadTailBuffer {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: u64,
}

impl HeadTailBuffer {
    /// A buffer keeping `cap` bytes in all, split evenly between head and tail.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            dropped: 0,
        }
    }

    /// Appends bytes, evicting from the middle once full.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= self.tail_cap {
            self.dropped += (self.tail.len() + bytes.len() - self.tail_cap) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.dropped += overflow as u64;
        self.tail.extend(bytes);
    }

    /// Bytes dropped from the middle so far.
    #[cfg(test)]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The retained text, with a marker where bytes were dropped.
    pub fn to_lossy_string(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!("\n[... {} bytes omitted ...]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

/// Cuts text for the model: keeps the first and last lines and bytes, marking what was cut.
pub fn truncate_for_model(text: &str, max_bytes: usize, max_lines: usize) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if text.len() <= max_bytes && lines.len() <= max_lines {
        return text.to_string();
    }
    let half_lines = max_lines / 2;
    let half_bytes = max_bytes / 2;
    let mut head = String::new();
    for line in lines.iter().take(half_lines) {
        if head.len() + line.len() > half_bytes {
            break;
        }
        head.push_str(line);
    }
    let mut tail_parts: Vec<&str> = Vec::new();
    let mut tail_len = 0;
    for line in lines.iter().rev().take(half_lines) {
        if tail_len + line.len() > half_bytes {
            break;
        }
        tail_len += line.len();
        tail_parts.push(line);
    }
    tail_parts.reverse();
    let omitted = lines
        .len()
        .saturating_sub(head.split_inclusive('\n').count() + tail_parts.len());
    format!(
        "Total output lines: {}\n\n{head}[... omitted {omitted} of {} lines ...]\n\n{}",
        lines.len(),
        lines.len(),
        tail_parts.concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_head_and_tail() {
        let mut buffer = HeadTailBuffer::new(8);
        buffer.push(b"0123");
        buffer.push(b"456789abcdef");
        assert_eq!(buffer.dropped(), 8);
        assert_eq!(
            buffer.to_lossy_string(),
            "0123\n[... 8 bytes omitted ...]\ncdef"
        );
    }

    #[test]
    fn small_output_is_untouched() {
        let mut buffer = HeadTailBuffer::new(64);
        buffer.push(b"hello\n");
        assert_eq!(buffer.to_lossy_string(), "hello\n");
        assert_eq!(truncate_for_model("a\nb\n", 100, 10), "a\nb\n");
    }

    #[test]
    fn many_lines_are_cut_in_the_middle() {
        let text: String = (0..1000).map(|n| format!("line {n}\n")).collect();
        let cut = truncate_for_model(&text, 10_000, 20);
        assert!(cut.starts_with("Total output lines: 1000"));
        assert!(cut.contains("line 0\n"));
        assert!(cut.contains("line 999\n"));
        assert!(!cut.contains("line 500\n"));
        assert!(cut.contains("omitted 980 of 1000 lines"));
    }
}
