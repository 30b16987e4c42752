//! Writes a planned patch to disk: every file or none.
//!
//! Three phases keep the disk consistent:
//! 1. **Verify** that each file still holds what the plan read (the user may have taken a
//!    while to approve the patch), so a stale plan never clobbers newer edits.
//! 2. **Stage** each new content in a hidden temporary file next to its target (creating
//!    parent directories), copying the permissions of the file it replaces.
//! 3. **Commit** with renames: each existing target is first renamed to a hidden backup in
//!    its directory, then the staged file is renamed into place. Every step is journaled;
//!    on failure the journal is undone in reverse, restoring originals, removing added files
//!    and undoing moves. Backups are deleted only after every rename succeeded.
//!
//! Renames within one directory are atomic, so a reader sees each file either old or new;
//! the set of files as a whole is "all or none" except during the commit window or a crash.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::applied_summary::AppliedSummary;
use super::error::ApplyError;
use super::links::ResolvedPath;
use rustix::fs::Mode;

use super::pinned_dir::{PinError, PinnedDir, set_mode};
use super::plan::{ApplyPatchAction, PlannedWrite};
use super::regular_file::{MAX_PATCHED_FILE_BYTES, read_regular_text};

/// Writes every planned change, or none: on failure, changes already made are undone.
pub fn apply(action: &ApplyPatchAction) -> Result<AppliedSummary, ApplyError> {
    apply_checked(action, |_| Ok(()))
}

/// Like [`apply`], but lets the caller refuse a place before anything is written: `check`
/// sees where each write really leads ([`PlannedWrite::resolve`]) and returns why it may not
/// go there. The writes then land exactly at the places `check` accepted: a symlink that
/// appears on the way afterwards fails the patch instead of redirecting it.
pub fn apply_checked(
    action: &ApplyPatchAction,
    check: impl FnMut(&ResolvedPath) -> Result<(), String>,
) -> Result<AppliedSummary, ApplyError> {
    let warnings = Transaction::default().run(action.writes(), check, None)?;
    let mut summary = action.summary().clone();
    summary.warnings = warnings;
    Ok(summary)
}

/// A step to fail on purpose, so tests can exercise rollback from each phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault<'a> {
    /// Fail while staging the new contents of this path.
    Stage(&'a Path),
    /// Fail while renaming the staged file onto this path.
    Install(&'a Path),
}

/// A completed commit step, undone in reverse on failure.
enum Done {
    /// The original file `name` in `dir` was renamed to `backup`.
    MovedAside {
        dir: Rc<PinnedDir>,
        name: OsString,
        backup: OsString,
    },
    /// A staged file was renamed to `name` in `dir`, which did not hold it before.
    Installed { dir: Rc<PinnedDir>, name: OsString },
}

#[derive(Default)]
struct Transaction {
    /// Directories already opened, by path.
    dirs: HashMap<PathBuf, Rc<PinnedDir>>,
    /// Directories created for new files (parent, name), outermost first.
    created_dirs: Vec<(PinnedDir, OsString)>,
    /// Hidden temporary and backup files; any that still exist at the end are removed.
    scratch_files: Vec<(Rc<PinnedDir>, OsString)>,
    journal: Vec<Done>,
}

/// A failed step before rollback.
struct StepError {
    step: &'static str,
    path: PathBuf,
    source: io::Error,
    /// Set when the failure was a symlink on the way: the link.
    link: Option<PathBuf>,
}

fn injected(step: &'static str, path: &Path) -> StepError {
    step_err(step, path)(io::Error::other("injected failure"))
}

fn step_err(step: &'static str, path: &Path) -> impl FnOnce(io::Error) -> StepError {
    let path = path.to_path_buf();
    move |source| StepError {
        step,
        path,
        source,
        link: None,
    }
}

/// Where one write lands: a file name in a directory reached without following links.
struct Target<'a> {
    write: &'a PlannedWrite,
    real: PathBuf,
}

impl Target<'_> {
    fn name(&self) -> &OsStr {
        self.real.file_name().unwrap_or(self.real.as_os_str())
    }

    fn parent(&self) -> &Path {
        self.real.parent().unwrap_or(Path::new("."))
    }
}

impl Transaction {
    /// Runs all phases; `fault` (always `None` outside tests) injects a failure.
    fn run(
        mut self,
        writes: &[PlannedWrite],
        check: impl FnMut(&ResolvedPath) -> Result<(), String>,
        fault: Option<Fault<'_>>,
    ) -> Result<Vec<String>, ApplyError> {
        let targets = verify(writes, check)?;
        match self.stage_and_commit(&targets, fault) {
            Ok(()) => Ok(self.cleanup()),
            Err(StepError {
                step,
                path,
                source,
                link,
            }) => {
                let rollback_failures = self.rollback();
                if let Some(link) = link.filter(|_| rollback_failures.is_empty()) {
                    return Err(ApplyError::Redirected { path, link });
                }
                if rollback_failures.is_empty() {
                    Err(ApplyError::Io { step, path, source })
                } else {
                    Err(ApplyError::RollbackFailed {
                        step,
                        path,
                        source,
                        rollback_failures,
                    })
                }
            }
        }
    }

    fn stage_and_commit(
        &mut self,
        targets: &[Target<'_>],
        fault: Option<Fault<'_>>,
    ) -> Result<(), StepError> {
        let mut staged = Vec::with_capacity(targets.len());
        for target in targets {
            let dir = self.pin(target, target.write.after.is_some())?;
            staged.push(match &target.write.after {
                Some(contents) => {
                    if fault == Some(Fault::Stage(&target.real)) {
                        return Err(injected("write a temporary file for", &target.real));
                    }
                    Some(self.stage(&dir, target, contents)?)
                }
                None => None,
            });
        }
        for (target, staged_file) in targets.iter().zip(staged) {
            let dir = self.pin(target, false)?;
            let name = target.name().to_os_string();
            let exists = dir
                .exists(&name)
                .map_err(step_err("move aside", &target.real))?;
            if exists {
                let (backup, _) = self.reserve_scratch(&dir, target, "backup")?;
                dir.rename(&name, &backup)
                    .map_err(step_err("move aside", &target.real))?;
                self.journal.push(Done::MovedAside {
                    dir: Rc::clone(&dir),
                    name: name.clone(),
                    backup,
                });
            }
            if let Some(staged_file) = staged_file {
                if fault == Some(Fault::Install(&target.real)) {
                    return Err(injected("install", &target.real));
                }
                dir.rename(&staged_file, &name)
                    .map_err(step_err("install", &target.real))?;
                self.journal.push(Done::Installed { dir, name });
            }
        }
        Ok(())
    }

    /// The directory `target` lands in, opened without following links (made with `create`).
    fn pin(&mut self, target: &Target<'_>, create: bool) -> Result<Rc<PinnedDir>, StepError> {
        let parent = target.parent();
        if let Some(dir) = self.dirs.get(parent) {
            return Ok(Rc::clone(dir));
        }
        let dir = match PinnedDir::open(parent, create, &mut self.created_dirs) {
            Ok(dir) => Rc::new(dir),
            Err(PinError::Link(link)) => {
                return Err(StepError {
                    step: "open",
                    path: target.write.path.clone(),
                    source: io::Error::other("a symlink appeared on the way"),
                    link: Some(link),
                });
            }
            Err(PinError::Io(path, source)) => {
                let step = if create { "create directory" } else { "open" };
                return Err(step_err(step, &path)(source));
            }
        };
        self.dirs.insert(parent.to_path_buf(), Rc::clone(&dir));
        Ok(dir)
    }

    /// Writes `contents` to a hidden file next to the target and returns its name.
    fn stage(
        &mut self,
        dir: &Rc<PinnedDir>,
        target: &Target<'_>,
        contents: &str,
    ) -> Result<OsString, StepError> {
        let (staged, mut file) = self.reserve_scratch(dir, target, "new")?;
        file.write_all(contents.as_bytes())
            .map_err(step_err("write a temporary file for", &target.real))?;
        // Keep the mode of the file being replaced (or of a move's source): an edited
        // script must stay executable.
        let mode = match &target.write.permissions_from {
            Some(source) => fs::metadata(source)
                .ok()
                .map(|meta| Mode::from_raw_mode(meta.permissions().mode())),
            None => dir.mode_of(target.name()),
        };
        if let Some(mode) = mode {
            set_mode(&file, mode).map_err(step_err("copy permissions to", &target.real))?;
        }
        Ok(staged)
    }

    /// Creates an empty hidden file beside the target, reserving a name no one else uses.
    fn reserve_scratch(
        &mut self,
        dir: &Rc<PinnedDir>,
        target: &Target<'_>,
        purpose: &str,
    ) -> Result<(OsString, fs::File), StepError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = target.name().to_string_lossy().into_owned();
        let mut last_error = io::Error::other("no free temporary name");
        for _ in 0..16 {
            let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
            let candidate = OsString::from(format!(
                ".{name}.keel-patch-{purpose}-{}-{unique}",
                std::process::id()
            ));
            match dir.create_new(&candidate) {
                Ok(file) => {
                    self.scratch_files.push((Rc::clone(dir), candidate.clone()));
                    return Ok((candidate, file));
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last_error = err,
                Err(source) => {
                    return Err(step_err("create a temporary file for", &target.real)(
                        source,
                    ));
                }
            }
        }
        Err(step_err("create a temporary file for", &target.real)(
            last_error,
        ))
    }

    /// Undoes the journal in reverse and removes scratch files and created directories.
    fn rollback(mut self) -> Vec<String> {
        let mut failures = Vec::new();
        while let Some(done) = self.journal.pop() {
            let (result, dir, name) = match &done {
                Done::Installed { dir, name } => (dir.remove_file(name), dir, name),
                Done::MovedAside { dir, name, backup } => (dir.rename(backup, name), dir, name),
            };
            if let Err(err) = result {
                failures.push(format!(
                    "could not restore `{}`: {err}",
                    dir.path().join(name).display()
                ));
            }
        }
        failures.extend(self.remove_scratch_files());
        while let Some((parent, name)) = self.created_dirs.pop() {
            if let Err(err) = parent.remove_dir(&name) {
                failures.push(format!(
                    "could not remove directory `{}`: {err}",
                    parent.path().join(&name).display()
                ));
            }
        }
        failures
    }

    /// After success: deletes backups; returns warnings for any left behind.
    fn cleanup(mut self) -> Vec<String> {
        self.remove_scratch_files()
    }

    fn remove_scratch_files(&mut self) -> Vec<String> {
        self.scratch_files
            .drain(..)
            .filter_map(|(dir, name)| match dir.remove_file(&name) {
                Ok(()) => None,
                Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                Err(err) => Some(format!(
                    "could not remove temporary file `{}`: {err}",
                    dir.path().join(&name).display()
                )),
            })
            .collect()
    }
}

/// Resolves where each write really leads, lets `check` refuse it, and checks every file
/// still matches the plan.
///
/// Writing through a symlink updates the file it points to, as an editor would; deleting a
/// symlink removes the link.
fn verify(
    writes: &[PlannedWrite],
    mut check: impl FnMut(&ResolvedPath) -> Result<(), String>,
) -> Result<Vec<Target<'_>>, ApplyError> {
    writes
        .iter()
        .map(|write| {
            let resolved = write.resolve().map_err(|source| ApplyError::Io {
                step: "resolve",
                path: write.path.clone(),
                source,
            })?;
            check(&resolved).map_err(|reason| ApplyError::Refused {
                path: write.path.clone(),
                reason,
            })?;
            let current = match read_regular_text(&resolved.real, MAX_PATCHED_FILE_BYTES) {
                Ok(contents) => contents,
                Err(source) => {
                    return Err(ApplyError::Io {
                        step: "read",
                        path: resolved.real,
                        source,
                    });
                }
            };
            if current != write.before {
                return Err(ApplyError::Stale {
                    path: write.path.clone(),
                });
            }
            Ok(Target {
                write,
                real: resolved.real,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
