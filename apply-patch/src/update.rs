//! Applies the chunks of one `*** Update File:` block to a file's text, in memory.

use std::path::Path;

use super::error::PlanError;
use super::parser::UpdateChunk;
use super::seek::{Anchor, seek_sequence};

/// One resolved edit: replace `len` lines at `start` with `lines`.
struct Replacement<'c> {
    start: usize,
    len: usize,
    lines: &'c [String],
}

/// Returns the file's new text after applying `chunks` in order, or the chunk that failed.
///
/// Line endings follow the original: a file using `\r\n` keeps `\r\n`. The result always
/// ends with a newline unless it is empty.
pub(crate) fn apply_chunks(
    original: &str,
    chunks: &[UpdateChunk],
    path: &Path,
) -> Result<String, PlanError> {
    let crlf = original.contains("\r\n");
    let mut lines: Vec<String> = original
        .split('\n')
        .map(|line| match line.strip_suffix('\r') {
            Some(stripped) if crlf => stripped.to_string(),
            _ => line.to_string(),
        })
        .collect();
    // `split` yields an empty last element for text ending in a newline (or empty text).
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }

    let mut replacements = Vec::with_capacity(chunks.len());
    let mut cursor = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        let replacement = locate(&lines, chunk, cursor)
            .map_err(|failure| failure.into_error(path, index + 1, chunk))?;
        cursor = replacement.start + replacement.len;
        replacements.push(replacement);
    }

    // Apply bottom-up so earlier indices stay valid; chunks never overlap because each
    // search starts where the previous match ended.
    replacements.sort_by_key(|replacement| replacement.start);
    for replacement in replacements.iter().rev() {
        lines.splice(
            replacement.start..replacement.start + replacement.len,
            replacement.lines.iter().cloned(),
        );
    }

    if lines.is_empty() {
        return Ok(String::new());
    }
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(newline);
    text.push_str(newline);
    Ok(text)
}

/// Why a chunk could not be placed.
enum Failure {
    Header(String),
    Lines,
}

impl Failure {
    fn into_error(self, path: &Path, chunk_number: usize, chunk: &UpdateChunk) -> PlanError {
        match self {
            Failure::Header(context) => PlanError::HeaderContextNotFound {
                path: path.to_path_buf(),
                chunk: chunk_number,
                line: chunk.line,
                context,
            },
            Failure::Lines => PlanError::ContextNotFound {
                path: path.to_path_buf(),
                chunk: chunk_number,
                line: chunk.line,
                expected: chunk.old_lines.join("\n"),
                at_end_of_file: chunk.is_end_of_file,
            },
        }
    }
}

fn locate<'c>(
    lines: &[String],
    chunk: &'c UpdateChunk,
    cursor: usize,
) -> Result<Replacement<'c>, Failure> {
    // Where the `@@ context` line was found: old lines may repeat it, so search from there.
    let mut search_from = cursor;
    let mut insert_at = None;
    if let Some(context) = &chunk.change_context {
        let found = seek_sequence(lines, std::slice::from_ref(context), Anchor::From(cursor))
            .ok_or_else(|| Failure::Header(context.clone()))?;
        search_from = found;
        insert_at = Some(found + 1);
    }

    if chunk.old_lines.is_empty() {
        // Pure insertion: right after the `@@` line if there is one, else at the end.
        let start = match insert_at {
            Some(after_context) if !chunk.is_end_of_file => after_context,
            _ => lines.len(),
        };
        return Ok(Replacement {
            start,
            len: 0,
            lines: &chunk.new_lines,
        });
    }

    let mut old: &[String] = &chunk.old_lines;
    let mut new: &[String] = &chunk.new_lines;
    loop {
        if let Some(start) = find(lines, old, search_from, chunk.is_end_of_file) {
            return Ok(Replacement {
                start,
                len: old.len(),
                lines: new,
            });
        }
        // A trailing empty line often stands for the file's final newline: retry without it.
        match old.split_last() {
            Some((last, rest)) if last.is_empty() && !rest.is_empty() => {
                old = rest;
                if let Some((last_new, rest_new)) = new.split_last()
                    && last_new.is_empty()
                {
                    new = rest_new;
                }
            }
            _ => return Err(Failure::Lines),
        }
    }
}

/// End-of-file chunks prefer a match at the end, then fall back to anywhere after `from`.
fn find(lines: &[String], old: &[String], from: usize, end_of_file: bool) -> Option<usize> {
    let at_end = end_of_file
        .then(|| seek_sequence(lines, old, Anchor::EndOfFile(from)))
        .flatten();
    at_end.or_else(|| seek_sequence(lines, old, Anchor::From(from)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{Hunk, parse_patch};
    use pretty_assertions::assert_eq;

    /// Parses a one-file update patch body and applies it to `original`.
    fn apply(original: &str, body: &str) -> Result<String, String> {
        let patch = parse_patch(&format!(
            "*** Begin Patch\n*** Update File: f.txt\n{body}\n*** End Patch"
        ))
        .map_err(|err| err.to_string())?;
        let Some(Hunk::Update { chunks, .. }) = patch.hunks.first() else {
            panic!("not an update: {patch:?}");
        };
        apply_chunks(original, chunks, Path::new("f.txt")).map_err(|err| err.to_string())
    }

    #[test]
    fn multiple_chunks_apply_in_order() {
        let original = "a\nb\nc\nd\ne\nf\n";
        let result = apply(original, "@@\n a\n-b\n+B\n@@\n e\n-f\n+F\n+G");
        assert_eq!(result.unwrap(), "a\nB\nc\nd\ne\nF\nG\n");
    }

    #[test]
    fn context_header_seeks_to_the_right_occurrence() {
        let original = "fn one() {\n    x = 1\n}\nfn two() {\n    x = 1\n}\n";
        let result = apply(original, "@@ fn two() {\n-    x = 1\n+    x = 2");
        assert_eq!(
            result.unwrap(),
            "fn one() {\n    x = 1\n}\nfn two() {\n    x = 2\n}\n"
        );
    }

    #[test]
    fn stacked_headers_and_repeated_context_line() {
        let original =
            "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        pass\n";
        let stacked = apply(
            original,
            "@@ class B:\n@@     def f(self):\n-        pass\n+        return 2",
        );
        assert_eq!(
            stacked.unwrap(),
            "class A:\n    def f(self):\n        pass\nclass B:\n    def f(self):\n        return 2\n"
        );
        // The model repeats the header line as the chunk's first context line.
        let repeated = apply(
            original,
            "@@ class B:\n class B:\n     def f(self):\n-        pass\n+        return 3",
        );
        assert!(
            repeated
                .unwrap()
                .ends_with("class B:\n    def f(self):\n        return 3\n")
        );
    }

    #[test]
    fn insertion_after_header_or_at_end() {
        let original = "a\nb\n";
        assert_eq!(
            apply(original, "@@ a\n+inserted").unwrap(),
            "a\ninserted\nb\n"
        );
        assert_eq!(
            apply(original, "@@\n+appended").unwrap(),
            "a\nb\nappended\n"
        );
    }

    #[test]
    fn end_of_file_chunk_matches_the_last_occurrence() {
        let original = "x\nend\nx\nend\n";
        let result = apply(original, "@@\n x\n-end\n+END\n*** End of File");
        assert_eq!(result.unwrap(), "x\nend\nx\nEND\n");
    }

    #[test]
    fn tolerates_trailing_whitespace_and_unicode_punctuation() {
        let original = "let s = \u{201C}caf\u{00E9}\u{201D};   \nlet d = a \u{2014} b;\n";
        let result = apply(
            original,
            "@@\n-let s = \"caf\u{00E9}\";\n+let s = \"tea\";\n-let d = a - b;\n+let d = a + b;",
        );
        assert_eq!(result.unwrap(), "let s = \"tea\";\nlet d = a + b;\n");
    }

    #[test]
    fn keeps_crlf_and_adds_final_newline() {
        assert_eq!(apply("a\r\nb\r\n", "@@\n-b\n+c").unwrap(), "a\r\nc\r\n");
        assert_eq!(apply("a\nb", "@@\n-b\n+c").unwrap(), "a\nc\n");
        assert_eq!(apply("only\n", "@@\n-only").unwrap(), "");
    }

    #[test]
    fn trailing_empty_context_line_is_optional() {
        // ` ` context line that stands for the final newline, which has no line of its own.
        assert_eq!(
            apply("a\nb\n", "@@\n-b\n+c\n \n*** End of File").unwrap(),
            "a\nc\n"
        );
    }

    #[test]
    fn never_panics_on_odd_files() {
        let body = "@@ b\n\n-c\n+C\n@@\n+tail\n@@\n x\n*** End of File";
        let file = "a\r\nb\n\nc\n x\n\u{2014}\n";
        for (cut, _) in file.char_indices() {
            let _ = apply(&file[..cut], body);
            let _ = apply(&file[cut..], body);
        }
        assert_eq!(apply("", "@@\n+new").unwrap(), "new\n");
    }

    #[test]
    fn failures_name_file_chunk_and_expected_lines() {
        let original = "a\nb\n";
        assert_eq!(
            apply(original, "@@\n-a\n+A\n@@\n x\n-y\n+z").unwrap_err(),
            "failed to apply chunk 2 (patch line 6) to `f.txt`: could not find these lines:\nx\ny"
        );
        assert_eq!(
            apply(original, "@@ missing\n-a\n+A").unwrap_err(),
            "failed to apply chunk 1 (patch line 3) to `f.txt`: could not find the line `@@ missing` after the previous chunk"
        );
        assert_eq!(
            apply(original, "@@\n-q\n*** End of File").unwrap_err(),
            "failed to apply chunk 1 (patch line 3) to `f.txt`: could not find these lines at the end of the file:\nq"
        );
        // The second chunk searches after the first: `a` is not found again.
        assert_eq!(
            apply(original, "@@\n-b\n+B\n@@\n-a\n+A").unwrap_err(),
            "failed to apply chunk 2 (patch line 6) to `f.txt`: could not find these lines:\na"
        );
    }
}
