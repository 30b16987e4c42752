//! Parses the patch text into [`Patch`]: file operations and, for updates, their chunks.
//!
//! The parser is lenient in the ways real models are sloppy: whitespace around markers,
//! a shell heredoc wrapper, blank lines between operations, a missing `@@` before the first
//! chunk of an update, blank context lines without their leading space, a git-style
//! `@@ -1,3 +1,4 @@` header, and blank lines without `+` inside an added file.

use std::path::{Path, PathBuf};

use super::error::{ParseError, excerpt};

const BEGIN_PATCH: &str = "*** Begin Patch";
const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File:";
const DELETE_FILE: &str = "*** Delete File:";
const UPDATE_FILE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: the file operations in the order they appear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// One entry per `*** Add/Delete/Update File:` block.
    pub hunks: Vec<Hunk>,
}

/// One file operation of a patch; paths are as written in the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    /// Create (or overwrite) a file with these contents.
    Add {
        /// The file to create.
        path: PathBuf,
        /// The full new contents, each line ending with `\n`.
        contents: String,
    },
    /// Remove a file.
    Delete {
        /// The file to remove.
        path: PathBuf,
    },
    /// Edit a file in place, optionally moving it.
    Update {
        /// The file to edit.
        path: PathBuf,
        /// Where the edited file goes, from `*** Move to:`.
        move_path: Option<PathBuf>,
        /// The edits, applied top to bottom.
        chunks: Vec<UpdateChunk>,
    },
}

impl Hunk {
    /// The path the hunk operates on (the source path for a move).
    pub fn path(&self) -> &Path {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// One `@@` chunk of an update: lines to find and what replaces them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateChunk {
    /// The `@@ <context>` line to seek to before matching, if any.
    pub change_context: Option<String>,
    /// Context and removed lines, in order: what must be found in the file.
    pub old_lines: Vec<String>,
    /// Context and added lines, in order: what replaces `old_lines`.
    pub new_lines: Vec<String>,
    /// Whether the chunk ends with `*** End of File` and so must match at the file's end.
    pub is_end_of_file: bool,
    /// 1-based patch line where the chunk starts, for error messages.
    pub line: usize,
}

/// One line of the patch text with its 1-based number.
#[derive(Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

/// Parses a patch in the `*** Begin Patch` … `*** End Patch` format.
pub fn parse_patch(text: &str) -> Result<Patch, ParseError> {
    let all: Vec<Line<'_>> = text
        .lines()
        .enumerate()
        .map(|(index, text)| Line {
            number: index + 1,
            text,
        })
        .collect();
    let lines = strip_heredoc(trim_blank_lines(&all))?;
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Err(ParseError::Empty);
    };
    if first.text.trim() != BEGIN_PATCH {
        return Err(ParseError::MissingBegin {
            line: first.number,
            found: excerpt(first.text),
        });
    }
    if lines.len() < 2 || last.text.trim() != END_PATCH {
        return Err(ParseError::MissingEnd {
            line: last.number,
            found: excerpt(last.text),
        });
    }
    let hunks = HunkParser {
        lines: &lines[1..lines.len() - 1],
        next: 0,
    }
    .parse()?;
    if hunks.is_empty() {
        return Err(ParseError::NoHunks);
    }
    Ok(Patch { hunks })
}

fn trim_blank_lines<'s, 'a>(lines: &'s [Line<'a>]) -> &'s [Line<'a>] {
    let start = lines
        .iter()
        .position(|line| !line.text.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|line| !line.text.trim().is_empty())
        .map_or(start, |last| last + 1);
    &lines[start..end]
}

/// Removes a `<<'EOF'` … `EOF` wrapper, as models send when they mimic a shell call.
fn strip_heredoc<'s, 'a>(lines: &'s [Line<'a>]) -> Result<&'s [Line<'a>], ParseError> {
    // The whole shell command (`apply_patch <<'EOF'`) sometimes lands in the tool input.
    let opener = |line: &Line<'a>| -> Option<&'a str> {
        let text = line.text.trim_start();
        let text = ["apply_patch", "applypatch"]
            .iter()
            .find_map(|name| text.strip_prefix(name))
            .unwrap_or(text);
        heredoc_delimiter(text)
    };
    let Some(delimiter) = lines.first().and_then(opener) else {
        return Ok(lines);
    };
    match lines.last() {
        Some(last) if lines.len() >= 2 && last.text.trim() == delimiter => {
            Ok(trim_blank_lines(&lines[1..lines.len() - 1]))
        }
        _ => Err(ParseError::UnterminatedHeredoc {
            delimiter: delimiter.to_string(),
        }),
    }
}

/// The delimiter of a heredoc opener such as `<<'EOF'`, `<<"EOF"`, `<<EOF` or `<<-EOF`.
pub(crate) fn heredoc_delimiter(opener: &str) -> Option<&str> {
    let rest = opener.trim().strip_prefix("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim();
    let word = ['\'', '"']
        .iter()
        .find_map(|quote| rest.strip_prefix(*quote)?.strip_suffix(*quote))
        .unwrap_or(rest);
    let valid = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    valid.then_some(word)
}

fn is_file_header(trimmed: &str) -> bool {
    [ADD_FILE, DELETE_FILE, UPDATE_FILE]
        .iter()
        .any(|header| trimmed.starts_with(header))
}

/// A `@@` chunk header: `Some(None)` for a bare `@@`, `Some(Some(context))` for `@@ context`.
fn chunk_header(raw: &str) -> Option<Option<String>> {
    let rest = raw.strip_prefix("@@")?.trim_end();
    if rest.trim().is_empty() || is_git_range(rest.trim()) {
        return Some(None);
    }
    // Keep the context's own indentation: it helps pick the right one of several matches.
    let context = rest.strip_prefix(' ').unwrap_or(rest);
    Some(Some(context.to_string()))
}

/// Recognises the `-1,3 +1,4 @@` tail of a git-style header, which carries no context.
fn is_git_range(rest: &str) -> bool {
    let Some(ranges) = rest.strip_suffix("@@") else {
        return false;
    };
    let is_range = |part: &str, sign: char| {
        part.strip_prefix(sign).is_some_and(|numbers| {
            !numbers.is_empty() && numbers.chars().all(|c| c.is_ascii_digit() || c == ',')
        })
    };
    let mut parts = ranges.split_whitespace();
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(old), Some(new), None) if is_range(old, '-') && is_range(new, '+')
    )
}

struct HunkParser<'s, 'a> {
    lines: &'s [Line<'a>],
    next: usize,
}

impl HunkParser<'_, '_> {
    fn parse(mut self) -> Result<Vec<Hunk>, ParseError> {
        let mut hunks = Vec::new();
        while let Some(line) = self.lines.get(self.next).copied() {
            self.next += 1;
            let trimmed = line.text.trim();
            if trimmed.is_empty() {
                continue;
            }
            let hunk = if let Some(path) = trimmed.strip_prefix(ADD_FILE) {
                let path = header_path(path, line.number, ADD_FILE)?;
                let contents = self.add_contents(&path)?;
                Hunk::Add { path, contents }
            } else if let Some(path) = trimmed.strip_prefix(DELETE_FILE) {
                Hunk::Delete {
                    path: header_path(path, line.number, DELETE_FILE)?,
                }
            } else if let Some(path) = trimmed.strip_prefix(UPDATE_FILE) {
                let path = header_path(path, line.number, UPDATE_FILE)?;
                self.update(path, line.number)?
            } else {
                return Err(ParseError::BadHunkHeader {
                    line: line.number,
                    found: excerpt(line.text),
                });
            };
            hunks.push(hunk);
        }
        Ok(hunks)
    }

    fn add_contents(&mut self, path: &Path) -> Result<String, ParseError> {
        let mut contents = String::new();
        // Blank lines without `+` count as empty lines only if more `+` lines follow.
        let mut pending_blank = 0;
        while let Some(line) = self.lines.get(self.next).copied() {
            if is_file_header(line.text.trim()) {
                break;
            }
            self.next += 1;
            if let Some(text) = line.text.strip_prefix('+') {
                contents.push_str(&"\n".repeat(pending_blank));
                pending_blank = 0;
                contents.push_str(text);
                contents.push('\n');
            } else if line.text.trim().is_empty() {
                pending_blank += 1;
            } else {
                return Err(ParseError::AddLineWithoutPlus {
                    line: line.number,
                    path: path.to_path_buf(),
                    found: excerpt(line.text),
                });
            }
        }
        Ok(contents)
    }

    fn update(&mut self, path: PathBuf, header_line: usize) -> Result<Hunk, ParseError> {
        let mut move_path = None;
        if let Some(line) = self.lines.get(self.next).copied()
            && let Some(target) = line.text.trim().strip_prefix(MOVE_TO)
        {
            self.next += 1;
            move_path = Some(header_path(target, line.number, MOVE_TO)?);
        }
        let mut chunks = Vec::new();
        while let Some(line) = self.lines.get(self.next).copied() {
            let trimmed = line.text.trim();
            if is_file_header(trimmed) {
                break;
            }
            if trimmed.is_empty() {
                // Blank lines between chunks carry nothing.
                self.next += 1;
                continue;
            }
            let change_context = match chunk_header(line.text) {
                Some(context) => {
                    self.next += 1;
                    context
                }
                // Models often start the first chunk without `@@`.
                None if chunks.is_empty() => None,
                None => {
                    return Err(ParseError::BadChunkLine {
                        line: line.number,
                        path,
                        found: excerpt(line.text),
                    });
                }
            };
            chunks.push(self.chunk_body(&path, change_context, line.number)?);
        }
        if chunks.is_empty() {
            return Err(ParseError::EmptyUpdate {
                line: header_line,
                path,
            });
        }
        Ok(Hunk::Update {
            path,
            move_path,
            chunks,
        })
    }

    fn chunk_body(
        &mut self,
        path: &Path,
        change_context: Option<String>,
        start_line: usize,
    ) -> Result<UpdateChunk, ParseError> {
        let mut chunk = UpdateChunk {
            change_context,
            old_lines: Vec::new(),
            new_lines: Vec::new(),
            is_end_of_file: false,
            line: start_line,
        };
        // Bare blank lines at the chunk's end are usually separators, not context.
        let mut trailing_bare_blanks = 0;
        while let Some(line) = self.lines.get(self.next).copied() {
            let trimmed = line.text.trim();
            if is_file_header(trimmed) || line.text.starts_with("@@") {
                break;
            }
            self.next += 1;
            if trimmed == END_OF_FILE {
                chunk.is_end_of_file = true;
                trailing_bare_blanks = 0;
                break;
            }
            let mut chars = line.text.chars();
            match chars.next() {
                Some(' ') => {
                    chunk.old_lines.push(chars.as_str().to_string());
                    chunk.new_lines.push(chars.as_str().to_string());
                    trailing_bare_blanks = 0;
                }
                Some('-') => {
                    chunk.old_lines.push(chars.as_str().to_string());
                    trailing_bare_blanks = 0;
                }
                Some('+') => {
                    chunk.new_lines.push(chars.as_str().to_string());
                    trailing_bare_blanks = 0;
                }
                _ if trimmed.is_empty() => {
                    chunk.old_lines.push(String::new());
                    chunk.new_lines.push(String::new());
                    trailing_bare_blanks += 1;
                }
                _ => {
                    return Err(ParseError::BadChunkLine {
                        line: line.number,
                        path: path.to_path_buf(),
                        found: excerpt(line.text),
                    });
                }
            }
        }
        for _ in 0..trailing_bare_blanks {
            chunk.old_lines.pop();
            chunk.new_lines.pop();
        }
        // `@@ class Foo` directly followed by `@@ def bar` only narrows the search: allowed.
        let narrows_search = chunk.change_context.is_some()
            && self
                .lines
                .get(self.next)
                .is_some_and(|line| line.text.starts_with("@@"));
        if chunk.old_lines.is_empty() && chunk.new_lines.is_empty() && !narrows_search {
            return Err(ParseError::EmptyChunk {
                line: start_line,
                path: path.to_path_buf(),
            });
        }
        Ok(chunk)
    }
}

fn header_path(rest: &str, line: usize, header: &'static str) -> Result<PathBuf, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(ParseError::MissingPath { line, header });
    }
    Ok(PathBuf::from(path))
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
