//! Finds where a chunk's lines sit in a file, from strict to forgiving comparisons.
//!
//! Models reproduce context imperfectly: trailing spaces get lost, indentation drifts, and
//! typographic punctuation (curly quotes, en dashes, non-breaking spaces) comes back as ASCII
//! or the reverse. Each [`Strictness`] level is tried over the whole search range before the
//! next, looser one, so an exact match always wins over a fuzzy one elsewhere.

use std::borrow::Cow;

/// How two lines are compared, from strictest to loosest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Exact,
    IgnoreTrailingWhitespace,
    IgnoreSurroundingWhitespace,
    NormalisePunctuation,
}

const LEVELS: [Strictness; 4] = [
    Strictness::Exact,
    Strictness::IgnoreTrailingWhitespace,
    Strictness::IgnoreSurroundingWhitespace,
    Strictness::NormalisePunctuation,
];

impl Strictness {
    fn canonical(self, line: &str) -> Cow<'_, str> {
        match self {
            Strictness::Exact => Cow::Borrowed(line),
            Strictness::IgnoreTrailingWhitespace => Cow::Borrowed(line.trim_end()),
            Strictness::IgnoreSurroundingWhitespace => Cow::Borrowed(line.trim()),
            Strictness::NormalisePunctuation => Cow::Owned(normalise_punctuation(line.trim())),
        }
    }
}

/// Where to look for a run of lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// Anywhere at or after this line index.
    From(usize),
    /// Only so that the run ends at the file's last line (and starts at or after this index).
    EndOfFile(usize),
}

/// Returns the index in `lines` where `pattern` starts, trying looser comparisons in turn.
///
/// An empty pattern matches at the anchor's start (or the file's end for `EndOfFile`).
pub(crate) fn seek_sequence(lines: &[String], pattern: &[String], anchor: Anchor) -> Option<usize> {
    let (start, at_end) = match anchor {
        Anchor::From(start) => (start, false),
        Anchor::EndOfFile(start) => (start, true),
    };
    let last_start = lines.len().checked_sub(pattern.len())?;
    if start > last_start {
        return None;
    }
    let candidates = if at_end {
        last_start..=last_start
    } else {
        start..=last_start
    };
    LEVELS.into_iter().find_map(|level| {
        // Canonicalise each line once per level, not once per candidate position.
        let wanted: Vec<Cow<'_, str>> = pattern.iter().map(|line| level.canonical(line)).collect();
        let haystack: Vec<Cow<'_, str>> = lines[start..]
            .iter()
            .map(|line| level.canonical(line))
            .collect();
        candidates
            .clone()
            .find(|&candidate| haystack[candidate - start..][..pattern.len()] == wanted[..])
    })
}

/// Maps typographic punctuation and exotic spaces to their ASCII counterparts.
fn normalise_punctuation(line: &str) -> String {
    line.chars()
        .map(|c| match c {
            // Hyphens, dashes and the minus sign.
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
            | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => '-',
            // Single quotes, primes and the modifier apostrophe.
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{02BC}'
            | '\u{FF07}' => '\'',
            // Double quotes, double primes and guillemets.
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}'
            | '\u{00BB}' | '\u{FF02}' => '"',
            // Non-breaking and fixed-width spaces.
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect::<String>()
        .replace('\u{2026}', "...")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|line| line.to_string()).collect()
    }

    #[test]
    fn exact_match_wins_over_earlier_fuzzy_match() {
        let file = lines(&["foo  ", "bar", "foo", "bar"]);
        assert_eq!(
            seek_sequence(&file, &lines(&["foo", "bar"]), Anchor::From(0)),
            Some(2)
        );
    }

    #[test]
    fn ignores_trailing_then_surrounding_whitespace() {
        let file = lines(&["a", "  value = 1   ", "b"]);
        assert_eq!(
            seek_sequence(&file, &lines(&["  value = 1"]), Anchor::From(0)),
            Some(1)
        );
        assert_eq!(
            seek_sequence(&file, &lines(&["value = 1"]), Anchor::From(0)),
            Some(1)
        );
        assert_eq!(
            seek_sequence(&file, &lines(&["value = 2"]), Anchor::From(0)),
            None
        );
    }

    #[test]
    fn normalises_unicode_punctuation_both_ways() {
        let file = lines(&[
            "x",
            "say(\u{201C}hi\u{201D}) \u{2014} it\u{2019}s\u{00A0}fine\u{2026}",
        ]);
        assert_eq!(
            seek_sequence(
                &file,
                &lines(&["say(\"hi\") - it's fine..."]),
                Anchor::From(0)
            ),
            Some(1)
        );
        let ascii = lines(&["a - b 'c'"]);
        assert_eq!(
            seek_sequence(
                &ascii,
                &lines(&["a \u{2013} b \u{2018}c\u{2019}"]),
                Anchor::From(0)
            ),
            Some(0)
        );
    }

    #[test]
    fn respects_start_and_end_of_file() {
        let file = lines(&["x", "y", "x", "y"]);
        assert_eq!(
            seek_sequence(&file, &lines(&["x"]), Anchor::From(1)),
            Some(2)
        );
        assert_eq!(
            seek_sequence(&file, &lines(&["x", "y"]), Anchor::EndOfFile(0)),
            Some(2)
        );
        assert_eq!(
            seek_sequence(&file, &lines(&["x"]), Anchor::EndOfFile(0)),
            None
        );
        assert_eq!(seek_sequence(&file, &lines(&["y"]), Anchor::From(4)), None);
    }

    #[test]
    fn empty_pattern_and_oversized_pattern() {
        let file = lines(&["a", "b"]);
        assert_eq!(seek_sequence(&file, &[], Anchor::From(1)), Some(1));
        assert_eq!(seek_sequence(&file, &[], Anchor::EndOfFile(0)), Some(2));
        assert_eq!(
            seek_sequence(&file, &lines(&["a", "b", "c"]), Anchor::From(0)),
            None
        );
        assert_eq!(seek_sequence(&[], &lines(&["a"]), Anchor::From(0)), None);
        assert_eq!(seek_sequence(&[], &[], Anchor::From(0)), Some(0));
    }
}
