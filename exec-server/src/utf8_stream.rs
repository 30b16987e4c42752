//! Text from a byte stream that arrives in chunks: a character split across two chunks is
//! kept until its last byte arrives instead of becoming two replacement characters, so every
//! consumer that shows process output as text sees what a terminal would.

/// Decodes successive chunks of one stream as UTF-8, carrying an incomplete character over to
/// the next chunk; bytes that can never be UTF-8 become U+FFFD, as `from_utf8_lossy` does.
#[derive(Debug, Default, Clone)]
pub struct Utf8ChunkDecoder {
    /// The first bytes (at most 3) of a character whose rest has not arrived yet.
    pending: Vec<u8>,
}

impl Utf8ChunkDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text of `chunk`, with any character begun in the previous chunk completed.
    pub fn decode(&mut self, chunk: &[u8]) -> String {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(chunk);
        let mut text = String::with_capacity(bytes.len());
        let mut rest = bytes.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    return text;
                }
                Err(err) => {
                    let (valid, after) = rest.split_at(err.valid_up_to());
                    // Cannot fail: `valid_up_to` marks a valid prefix.
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match err.error_len() {
                        Some(bad) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            self.pending = after.to_vec();
                            return text;
                        }
                    }
                }
            }
        }
    }

    /// What is left at the end of the stream: a replacement character for a character that
    /// never completed, else nothing.
    pub fn finish(&mut self) -> String {
        if std::mem::take(&mut self.pending).is_empty() {
            String::new()
        } else {
            char::REPLACEMENT_CHARACTER.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn characters_split_across_chunks_survive_every_split() {
        let text = "héllo → 世界 🦀!";
        let bytes = text.as_bytes();
        for size in 1..=bytes.len() {
            let mut decoder = Utf8ChunkDecoder::new();
            let mut out: String = bytes.chunks(size).map(|c| decoder.decode(c)).collect();
            out.push_str(&decoder.finish());
            assert_eq!(out, text, "chunk size {size}");
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters_as_lossy_does() {
        let mut decoder = Utf8ChunkDecoder::new();
        assert_eq!(decoder.decode(b"a\xffb\xe2"), "a\u{fffd}b");
        assert_eq!(decoder.decode(b"\x82"), "");
        assert_eq!(decoder.decode(b"\xacz"), "\u{20ac}z");
        assert_eq!(decoder.decode(b"\xe2\x82"), "");
        assert_eq!(decoder.finish(), "\u{fffd}");
    }
}
