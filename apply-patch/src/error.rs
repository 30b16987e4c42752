//! Errors for each stage of applying a patch: parsing, planning and writing.
//!
//! Every message is written to be shown to the model as the tool output, so it names the
//! patch line, the file and what was expected.

use std::io;
use std::path::PathBuf;

/// Why a patch text could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text is empty or only whitespace.
    #[error("the patch is empty; expected `*** Begin Patch`")]
    Empty,
    /// The first line is not `*** Begin Patch`.
    #[error("line {line}: expected `*** Begin Patch`, found `{found}`")]
    MissingBegin {
        /// 1-based line number in the patch text.
        line: usize,
        /// The offending line (shortened).
        found: String,
    },
    /// The last line is not `*** End Patch`.
    #[error("line {line}: expected `*** End Patch` as the last line, found `{found}`")]
    MissingEnd {
        /// 1-based line number in the patch text.
        line: usize,
        /// The offending line (shortened).
        found: String,
    },
    /// A line where a file operation should start is something else.
    #[error(
        "line {line}: expected `*** Add File:`, `*** Delete File:` or `*** Update File:`, found `{found}`"
    )]
    BadHunkHeader {
        /// 1-based line number in the patch text.
        line: usize,
        /// The offending line (shortened).
        found: String,
    },
    /// A file operation header has no path after the colon.
    #[error("line {line}: `{header}` must be followed by a file path")]
    MissingPath {
        /// 1-based line number in the patch text.
        line: usize,
        /// The header that lacks a path, e.g. `*** Add File:`.
        header: &'static str,
    },
    /// A line of an added file does not start with `+`.
    #[error(
        "line {line}: in `*** Add File: {}`, expected a line starting with `+`, found `{found}`",
        .path.display()
    )]
    AddLineWithoutPlus {
        /// 1-based line number in the patch text.
        line: usize,
        /// The file being added.
        path: PathBuf,
        /// The offending line (shortened).
        found: String,
    },
    /// An update hunk has no `@@` chunk at all.
    #[error(
        "line {line}: `*** Update File: {}` has no changes; expected `@@` followed by lines starting with ` `, `-` or `+`",
        .path.display()
    )]
    EmptyUpdate {
        /// 1-based line number of the update header.
        line: usize,
        /// The file being updated.
        path: PathBuf,
    },
    /// A chunk has a header but no lines.
    #[error(
        "line {line}: in `*** Update File: {}`, the `@@` chunk has no lines starting with ` `, `-` or `+`",
        .path.display()
    )]
    EmptyChunk {
        /// 1-based line number of the chunk header.
        line: usize,
        /// The file being updated.
        path: PathBuf,
    },
    /// A line inside an update chunk has an unknown prefix.
    #[error(
        "line {line}: in `*** Update File: {}`, expected a line starting with ` `, `-`, `+` or `@@`, found `{found}`",
        .path.display()
    )]
    BadChunkLine {
        /// 1-based line number in the patch text.
        line: usize,
        /// The file being updated.
        path: PathBuf,
        /// The offending line (shortened).
        found: String,
    },
    /// The patch has the envelope but no file operations.
    #[error("the patch contains no file operations between `*** Begin Patch` and `*** End Patch`")]
    NoHunks,
    /// A shell heredoc around the patch is never closed.
    #[error("the heredoc around the patch is not closed by a line `{delimiter}`")]
    UnterminatedHeredoc {
        /// The heredoc delimiter that was expected, e.g. `EOF`.
        delimiter: String,
    },
}

/// Why a parsed patch cannot be applied to the files as they are; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An update or delete names a file that does not exist.
    #[error("cannot {action} `{}`: the file does not exist", .path.display())]
    FileNotFound {
        /// The resolved path.
        path: PathBuf,
        /// `update` or `delete`.
        action: &'static str,
    },
    /// A path names a directory where a file is needed.
    #[error("cannot {action} `{}`: it is a directory", .path.display())]
    IsADirectory {
        /// The resolved path.
        path: PathBuf,
        /// `add`, `update`, `delete` or `move to`.
        action: &'static str,
    },
    /// Two hunks touch the same file.
    #[error(
        "`{}` is changed by more than one operation in this patch; put all its changes in one `*** Update File:` block",
        .path.display()
    )]
    PathTouchedTwice {
        /// The resolved path.
        path: PathBuf,
    },
    /// Reading a file failed (including a file that is not UTF-8 text).
    #[error("cannot read `{}`: {source}", .path.display())]
    Read {
        /// The resolved path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The `@@ <context>` line of a chunk was not found.
    #[error(
        "failed to apply chunk {chunk} (patch line {line}) to `{}`: could not find the line `@@ {context}` after the previous chunk",
        .path.display()
    )]
    HeaderContextNotFound {
        /// The resolved path.
        path: PathBuf,
        /// 1-based chunk index within the file's hunk.
        chunk: usize,
        /// 1-based patch line of the chunk.
        line: usize,
        /// The context line searched for.
        context: String,
    },
    /// The lines a chunk removes or keeps were not found.
    #[error(
        "failed to apply chunk {chunk} (patch line {line}) to `{}`: could not find these lines{}:\n{expected}",
        .path.display(),
        if *.at_end_of_file { " at the end of the file" } else { "" }
    )]
    ContextNotFound {
        /// The resolved path.
        path: PathBuf,
        /// 1-based chunk index within the file's hunk.
        chunk: usize,
        /// 1-based patch line of the chunk.
        line: usize,
        /// The context and removed lines, joined by newlines.
        expected: String,
        /// Whether the chunk was anchored with `*** End of File`.
        at_end_of_file: bool,
    },
}

/// Why writing a planned patch failed; every change already made was rolled back.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A file changed on disk between planning and applying.
    #[error(
        "`{}` changed on disk after the patch was checked; nothing was written",
        .path.display()
    )]
    Stale {
        /// The file that changed.
        path: PathBuf,
    },
    /// The caller's check refused the place a write leads to; nothing was written.
    #[error("{reason}")]
    Refused {
        /// The path as the patch names it.
        path: PathBuf,
        /// Why, as the caller's check put it.
        reason: String,
    },
    /// A symlink appeared on a checked path before the write; nothing was written.
    #[error(
        "`{}` was redirected by a symlink that appeared at `{}` after the patch was checked; no file was changed",
        .path.display(),
        .link.display()
    )]
    Redirected {
        /// The path as the patch names it.
        path: PathBuf,
        /// The symlink met on the way.
        link: PathBuf,
    },
    /// A filesystem step failed and the changes made so far were undone.
    #[error("failed to {step} `{}`: {source}; no file was changed", .path.display())]
    Io {
        /// What was being done, e.g. `write a temporary file for`.
        step: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A filesystem step failed and undoing the earlier steps failed too.
    #[error(
        "failed to {step} `{}`: {source}; rolling back also failed, files may be partly changed: {}",
        .path.display(),
        .rollback_failures.join("; ")
    )]
    RollbackFailed {
        /// What was being done.
        step: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
        /// One message per undo step that failed.
        rollback_failures: Vec<String>,
    },
}

/// Any failure of [`super::apply_patch_in_dir`]: parse, plan or apply.
#[derive(Debug, thiserror::Error)]
pub enum ApplyPatchError {
    /// The patch text is malformed.
    #[error("invalid patch: {0}")]
    Parse(#[from] ParseError),
    /// The patch does not fit the files on disk.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Writing the files failed.
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

/// Shortens a line for an error message so one huge line cannot flood the output.
pub(crate) fn excerpt(line: &str) -> String {
    const MAX_CHARS: usize = 80;
    match line.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
