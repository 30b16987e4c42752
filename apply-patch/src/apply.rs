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

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::ApplyError;
use super::plan::{ApplyPatchAction, PlannedWrite};

/// What a successful apply changed, with paths as the patch wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedSummary {
    /// Files created (or overwritten) by `*** Add File:`.
    pub added: Vec<PathBuf>,
    /// Files edited; for a move, the destination path.
    pub modified: Vec<PathBuf>,
    /// Files removed.
    pub deleted: Vec<PathBuf>,
    /// Non-fatal problems, such as a leftover backup file that could not be removed.
    pub warnings: Vec<String>,
}

impl fmt::Display for AppliedSummary {
    /// Renders the tool output: `Success. Updated the following files:` then `A/M/D path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Success. Updated the following files:")?;
        let groups = [
            ("A", &self.added),
            ("M", &self.modified),
            ("D", &self.deleted),
        ];
        for (letter, paths) in groups {
            for path in paths {
                writeln!(f, "{letter} {}", path.display())?;
            }
        }
        for warning in &self.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        Ok(())
    }
}

/// Writes every planned change, or none: on failure, changes already made are undone.
pub fn apply(action: &ApplyPatchAction) -> Result<AppliedSummary, ApplyError> {
    let warnings = Transaction::default().run(action.writes(), None)?;
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
    /// The original file at `target` was renamed to `backup`.
    MovedAside { target: PathBuf, backup: PathBuf },
    /// A staged file was renamed to `target`, which did not exist before.
    Installed { target: PathBuf },
}

#[derive(Default)]
struct Transaction {
    /// Directories created for new files, outermost first.
    created_dirs: Vec<PathBuf>,
    /// Hidden temporary and backup files; any that still exist at the end are removed.
    scratch_files: Vec<PathBuf>,
    journal: Vec<Done>,
}

/// A failed step before rollback.
struct StepError {
    step: &'static str,
    path: PathBuf,
    source: io::Error,
}

fn injected(step: &'static str, path: &Path) -> StepError {
    StepError {
        step,
        path: path.to_path_buf(),
        source: io::Error::other("injected failure"),
    }
}

fn step_err(step: &'static str, path: &Path) -> impl FnOnce(io::Error) -> StepError {
    let path = path.to_path_buf();
    move |source| StepError { step, path, source }
}

impl Transaction {
    /// Runs all phases; `fault` (always `None` outside tests) injects a failure.
    fn run(
        mut self,
        writes: &[PlannedWrite],
        fault: Option<Fault<'_>>,
    ) -> Result<Vec<String>, ApplyError> {
        let targets = verify(writes)?;
        match self.stage_and_commit(writes, &targets, fault) {
            Ok(()) => Ok(self.cleanup()),
            Err(StepError { step, path, source }) => {
                let rollback_failures = self.rollback();
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
        writes: &[PlannedWrite],
        targets: &[PathBuf],
        fault: Option<Fault<'_>>,
    ) -> Result<(), StepError> {
        let mut staged = Vec::with_capacity(writes.len());
        for (write, target) in writes.iter().zip(targets) {
            staged.push(match &write.after {
                Some(contents) => {
                    if fault == Some(Fault::Stage(target)) {
                        return Err(injected("write a temporary file for", target));
                    }
                    Some(self.stage(write, target, contents)?)
                }
                None => None,
            });
        }
        for (target, staged_file) in targets.iter().zip(staged) {
            if fs::symlink_metadata(target).is_ok() {
                let backup = self.reserve_scratch(target, "backup")?;
                fs::rename(target, &backup).map_err(step_err("move aside", target))?;
                self.journal.push(Done::MovedAside {
                    target: target.clone(),
                    backup,
                });
            }
            if let Some(staged_file) = staged_file {
                if fault == Some(Fault::Install(target)) {
                    return Err(injected("install", target));
                }
                fs::rename(&staged_file, target).map_err(step_err("install", target))?;
                self.journal.push(Done::Installed {
                    target: target.clone(),
                });
            }
        }
        Ok(())
    }

    /// Writes `contents` to a hidden file next to `target` and returns its path.
    fn stage(
        &mut self,
        write: &PlannedWrite,
        target: &Path,
        contents: &str,
    ) -> Result<PathBuf, StepError> {
        if let Some(parent) = target.parent() {
            self.create_dirs(parent)?;
        }
        let staged = self.reserve_scratch(target, "new")?;
        let mut file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&staged)
            .map_err(step_err("write a temporary file for", target))?;
        file.write_all(contents.as_bytes())
            .map_err(step_err("write a temporary file for", target))?;
        // Keep the mode of the file being replaced (or of a move's source): an edited
        // script must stay executable.
        let permissions_source = write.permissions_from.as_deref().unwrap_or(target);
        if let Ok(metadata) = fs::metadata(permissions_source) {
            fs::set_permissions(&staged, metadata.permissions())
                .map_err(step_err("copy permissions to", target))?;
        }
        Ok(staged)
    }

    fn create_dirs(&mut self, dir: &Path) -> Result<(), StepError> {
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .take_while(|ancestor| !ancestor.as_os_str().is_empty() && !ancestor.exists())
            .map(Path::to_path_buf)
            .collect();
        for missing_dir in missing.into_iter().rev() {
            fs::create_dir(&missing_dir).map_err(step_err("create directory", &missing_dir))?;
            self.created_dirs.push(missing_dir);
        }
        Ok(())
    }

    /// Creates an empty hidden file beside `target`, reserving a name no one else uses.
    fn reserve_scratch(&mut self, target: &Path, purpose: &str) -> Result<PathBuf, StepError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = target.parent().unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut last_error = io::Error::other("no free temporary name");
        for _ in 0..16 {
            let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
            let candidate = dir.join(format!(
                ".{name}.keel-patch-{purpose}-{}-{unique}",
                std::process::id()
            ));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&candidate)
            {
                Ok(_) => {
                    self.scratch_files.push(candidate.clone());
                    return Ok(candidate);
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last_error = err,
                Err(source) => {
                    return Err(StepError {
                        step: "create a temporary file for",
                        path: target.to_path_buf(),
                        source,
                    });
                }
            }
        }
        Err(StepError {
            step: "create a temporary file for",
            path: target.to_path_buf(),
            source: last_error,
        })
    }

    /// Undoes the journal in reverse and removes scratch files and created directories.
    fn rollback(mut self) -> Vec<String> {
        let mut failures = Vec::new();
        while let Some(done) = self.journal.pop() {
            let (result, what) = match &done {
                Done::Installed { target } => (fs::remove_file(target), target),
                Done::MovedAside { target, backup } => (fs::rename(backup, target), target),
            };
            if let Err(err) = result {
                failures.push(format!("could not restore `{}`: {err}", what.display()));
            }
        }
        failures.extend(self.remove_scratch_files());
        while let Some(dir) = self.created_dirs.pop() {
            if let Err(err) = fs::remove_dir(&dir) {
                failures.push(format!(
                    "could not remove directory `{}`: {err}",
                    dir.display()
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
            .filter_map(|file| match fs::remove_file(&file) {
                Ok(()) => None,
                Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                Err(err) => Some(format!(
                    "could not remove temporary file `{}`: {err}",
                    file.display()
                )),
            })
            .collect()
    }
}

/// Checks every file still matches the plan and returns the real paths to write.
///
/// Writing through a symlink updates the file it points to, as an editor would.
fn verify(writes: &[PlannedWrite]) -> Result<Vec<PathBuf>, ApplyError> {
    writes
        .iter()
        .map(|write| {
            let is_symlink = fs::symlink_metadata(&write.path)
                .is_ok_and(|metadata| metadata.file_type().is_symlink());
            let target = if is_symlink && write.after.is_some() {
                fs::canonicalize(&write.path).map_err(|source| ApplyError::Io {
                    step: "resolve the symlink",
                    path: write.path.clone(),
                    source,
                })?
            } else {
                write.path.clone()
            };
            let current = match fs::read_to_string(&target) {
                Ok(contents) => Some(contents),
                Err(err) if err.kind() == io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(ApplyError::Io {
                        step: "read",
                        path: target,
                        source,
                    });
                }
            };
            if current != write.before {
                return Err(ApplyError::Stale {
                    path: write.path.clone(),
                });
            }
            Ok(target)
        })
        .collect()
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
