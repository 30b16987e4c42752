//! Placeholders for missing protected folders. A command must not create `.git`, `.codex`,
//! `.agents` or `.aws` in a writable root, and a mount needs something to mount on, so the
//! helper creates the folder (empty) for the run, covers it with an empty read-only file
//! system, and removes it afterwards.
//!
//! A placeholder is marked by its sticky bit (`drwxr-xr-t`), which a folder a person made
//! practically never has. Several runs in one workspace share a placeholder: each holds a
//! shared `flock` on it while it runs, and the last one out removes it: only if it can take
//! the lock exclusively (no run uses it any more) and it is still an empty, marked folder
//! (nobody outside a sandbox filled or claimed it); a
//! removal in one mount namespace would otherwise take the read-only mount away in the
//! others. A run that locks a placeholder checks it still is the folder at that path, since
//! the last user may have removed it just before. An existing empty folder is treated the
//! same way (it may be another run's placeholder). Only helpers ever see a placeholder itself
//! (commands see the empty file system over it), so only a helper removing one holds the
//! exclusive lock, and only for a moment: waiting for the shared lock cannot hang.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::SandboxError;

/// How many times a run starts over when the placeholder changes under it.
const ATTEMPTS: usize = 50;

/// The mode of a placeholder: readable, and marked by the sticky bit.
const PLACEHOLDER_MODE: u32 = 0o1755;

/// A placeholder (or an empty folder that may be one) this run holds while it runs.
#[derive(Debug)]
pub(super) struct Placeholder {
    path: PathBuf,
    lock: Flock<File>,
}

impl Placeholder {
    /// Creates (or joins) the placeholder at `path`; `None` when it cannot be created (then
    /// the command, which has no more rights than the helper, cannot create it either).
    pub(super) fn create(path: &Path) -> Result<Option<Self>, SandboxError> {
        for _ in 0..ATTEMPTS {
            match std::fs::create_dir(path) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    let mark = std::fs::Permissions::from_mode(PLACEHOLDER_MODE);
                    // Unmarked (it cannot fail for a folder the helper just made, but if it
                    // did), it would merely stay after the run.
                    let _ = std::fs::set_permissions(path, mark);
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(_) => return Ok(None),
            }
            let Ok(dir) = open_dir(path) else {
                // Replaced by something else between the two calls: try again.
                continue;
            };
            // Waits while its last user removes it.
            let lock = match Flock::lock(dir, FlockArg::LockShared) {
                Ok(lock) => lock,
                Err((_, err)) => {
                    return Err(SandboxError::ReadOnlySubpath {
                        path: path.to_path_buf(),
                        step: "lock the placeholder",
                        source: err.into(),
                    });
                }
            };
            if still_there(path, &lock) {
                return Ok(Some(Self {
                    path: path.to_path_buf(),
                    lock,
                }));
            }
        }
        Err(SandboxError::ReadOnlySubpath {
            path: path.to_path_buf(),
            step: "create a placeholder",
            source: std::io::Error::other("it kept changing under the sandbox"),
        })
    }

    /// The placeholder's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the placeholder if no other run holds it and it is still an empty, marked
    /// folder. Call after its mount was taken away in this namespace.
    pub(super) fn remove_if_unused(self) {
        if self.lock.relock(FlockArg::LockExclusiveNonblock).is_err() {
            return;
        }
        let marked = self.lock.metadata().is_ok_and(|held| {
            use std::os::unix::fs::PermissionsExt;
            held.permissions().mode() & 0o7777 == PLACEHOLDER_MODE
        });
        if marked && still_there(&self.path, &self.lock) {
            // Fails, as it should, when somebody put something in it.
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}

fn open_dir(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Whether `path` still names the folder `lock` holds.
fn still_there(path: &Path, lock: &Flock<File>) -> bool {
    match (path.symlink_metadata(), lock.metadata()) {
        (Ok(now), Ok(held)) => now.dev() == held.dev() && now.ino() == held.ino(),
        _ => false,
    }
}
