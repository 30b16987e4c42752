//! Read-only protected folders: Landlock rules only ever grant access to whole subtrees, so a
//! writable root cannot have a read-only hole in it. Instead, inside the helper's private
//! mount namespace, each protected path that exists is bind-mounted read-only over itself and
//! each missing one gets a read-only placeholder ([`super::placeholders`]). Writes there fail
//! with `EROFS`; the mounts cannot be removed or renamed, since Landlock later denies every
//! mount operation.

use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::statvfs::{FsFlags, statvfs};

use super::placeholders::Placeholder;
use crate::SandboxError;

/// Makes every path of `paths` read-only: a file or a folder with something in it by a bind
/// mount, a missing or empty folder by a placeholder, returned so the caller removes it after
/// the run.
pub(super) fn protect(paths: &[PathBuf]) -> Result<Vec<Placeholder>, SandboxError> {
    let mut placeholders = Vec::new();
    for path in paths {
        let empty_or_missing = match path.symlink_metadata() {
            Err(_) => true,
            Ok(metadata) => {
                metadata.is_dir()
                    && std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
            }
        };
        if !empty_or_missing {
            bind_read_only(path)?;
        } else if let Some(placeholder) = Placeholder::create(path)? {
            mount_empty_read_only(path)?;
            placeholders.push(placeholder);
        }
    }
    Ok(placeholders)
}

fn fail(path: &Path, step: &'static str) -> impl FnOnce(nix::Error) -> SandboxError {
    let path = path.to_path_buf();
    move |err| SandboxError::ReadOnlySubpath {
        path,
        step,
        source: std::io::Error::from(err),
    }
}

fn bind_read_only(path: &Path) -> Result<(), SandboxError> {
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(fail(path, "bind mount"))?;
    // A remount must repeat the flags a user namespace locked, or it is refused.
    let kept = statvfs(path)
        .map(|stat| locked_flags(stat.flags()))
        .map_err(fail(path, "statvfs"))?;
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
        None::<&str>,
    )
    .map_err(fail(path, "remount read-only"))
}

/// An empty read-only file system over a placeholder: the command sees an empty folder it
/// cannot write, and never the placeholder itself (so it cannot hold its lock).
fn mount_empty_read_only(path: &Path) -> Result<(), SandboxError> {
    mount(
        Some("tmpfs"),
        path,
        Some("tmpfs"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("size=4k,mode=0555"),
    )
    .map_err(fail(path, "mount a read-only placeholder"))
}

/// Takes the placeholder's mount away in this namespace, so it can be removed.
pub(super) fn unmount(path: &Path) {
    let _ = umount2(path, MntFlags::MNT_DETACH);
}

/// Mounts a `/proc` of this PID namespace over `/proc`: the command's `ps` and
/// `/proc/PID/cmdline` show only its own processes. Call from the namespace's first process.
pub(super) fn mount_own_proc() -> nix::Result<()> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
}

fn locked_flags(flags: FsFlags) -> MsFlags {
    [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(fs, _)| flags.contains(*fs))
    .fold(MsFlags::empty(), |acc, (_, ms)| acc | ms)
}
