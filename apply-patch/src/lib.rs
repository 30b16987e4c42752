//! The `apply_patch` tool: Codex's patch format, parsed, checked and applied all-or-nothing.
//!
//! Data flows through three stages, each usable on its own:
//!
//! 1. [`parse_patch`] turns the model's text into a [`Patch`] (leniently: see the parser
//!    module for what sloppiness it forgives). A `shell` call that runs `apply_patch` is
//!    recognised by [`maybe_parse_apply_patch_from_argv`].
//! 2. [`plan_patch`] resolves paths against a cwd, reads the files and computes every new
//!    content in memory, matching context exactly first and then ever more loosely
//!    (trailing whitespace, surrounding whitespace, Unicode punctuation). It yields an
//!    [`ApplyPatchAction`] whose [`FileChange`](keel_protocol::FileChange) map is what the
//!    user approves. Nothing is written; any failing chunk fails the whole patch.
//! 3. [`apply`] writes the action: it refuses if a file changed since planning, stages new
//!    contents beside their targets, renames them into place, and rolls back on failure.
//!
//! Behaviour callers rely on:
//! - Relative paths join the cwd; absolute paths are used as given; `.`/`..` are resolved
//!   lexically. No path is refused here: sandboxing is the caller's decision, made on where
//!   each of [`ApplyPatchAction::writes`] really leads ([`resolve_links`] follows the
//!   symlinks on the way). [`apply_patch_in_dir`] makes no such check.
//! - Writes replace files by renaming a new file into place, so a hard link is replaced,
//!   never written through. [`apply_checked`] lets the caller refuse the real place of each
//!   write and then writes exactly there: every directory on the way is opened without
//!   following symlinks, so a link planted after the check fails the patch instead of
//!   carrying the write elsewhere.
//! - `*** Add File:` on an existing file overwrites it (reported as `Add`), and a move onto
//!   an existing file replaces that file, as Codex does.
//! - [`FileChange::Update`](keel_protocol::FileChange::Update) carries a header-less unified
//!   diff (hunks starting `@@ -a,b +c,d @@`, three lines of context); a move is keyed by
//!   its source path with `move_path` set to the absolute destination.
//! - Only regular files are read (a FIFO, a device or a socket is refused, without blocking),
//!   up to [`MAX_PATCHED_FILE_BYTES`].
//! - Updated files keep their line endings (`\r\n` stays) and permissions, and end with a
//!   newline. A file may appear in only one operation of a patch.
//!
//! Everything is synchronous `std::fs`; async callers should use `spawn_blocking`.

mod applied_summary;
mod apply;
mod error;
mod lexical;
mod links;
mod parser;
mod pinned_dir;
mod plan;
mod regular_file;
mod seek;
mod shell_detect;
mod tool_spec;
mod update;

use std::path::Path;

pub use applied_summary::{AppliedSummary, SUCCESS_HEADING};
pub use apply::{apply, apply_checked};
pub use error::{ApplyError, ApplyPatchError, ParseError, PlanError};
pub use links::{ResolvedPath, SymlinkHop, resolve_links};
pub use parser::{Hunk, Patch, UpdateChunk, parse_patch};
pub use plan::{ApplyPatchAction, PlannedWrite, plan_patch, plan_patch_over, touched_paths};
pub use regular_file::{
    MAX_PATCHED_FILE_BYTES, not_a_regular_file, read_regular_file, read_regular_text,
};
pub use shell_detect::{ShellApplyPatch, maybe_parse_apply_patch_from_argv};
pub use tool_spec::{APPLY_PATCH_TOOL_NAME, apply_patch_freeform_tool, apply_patch_function_tool};

/// Parses, plans and applies `patch_text` in `cwd` in one go, with no approval step.
pub fn apply_patch_in_dir(patch_text: &str, cwd: &Path) -> Result<AppliedSummary, ApplyPatchError> {
    let patch = parse_patch(patch_text)?;
    let action = plan_patch(&patch, cwd)?;
    Ok(apply(&action)?)
}
