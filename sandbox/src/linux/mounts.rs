//! Read-only `.git`: Landlock rules only ever grant access to whole subtrees, so a writable
//! root cannot have a read-only hole in it. Instead the helper enters a private mount
//! namespace (a user namespace too when it lacks `CAP_SYS_ADMIN`) and bind-mounts each
//! protected path read-only over itself. Writes there fail with `EROFS`; the mount cannot be
//! removed or renamed, since Landlock later denies every mount operation.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{getgid, getuid};

use crate::SandboxError;

pub(super) fn bind_read_only(paths: &[PathBuf]) -> Result<(), SandboxError> {
    let Some(first) = paths.first() else {
        return Ok(());
    };
    let fail = |path: &Path, step: &'static str| {
        let path = path.to_path_buf();
        move |err: nix::Error| SandboxError::ReadOnlySubpath {
            path,
            step,
            source: std::io::Error::from(err),
        }
    };
    if unshare(CloneFlags::CLONE_NEWNS).is_err() {
        enter_user_namespace().map_err(|(step, err)| fail(first, step)(err))?;
    }
    // Without this, mounts below would propagate back to the parent namespace when `/` is a
    // shared mount (the systemd default).
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(fail(first, "make mounts private"))?;
    for path in paths {
        mount(
            Some(path.as_path()),
            path.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(fail(path, "bind mount"))?;
        // A remount must repeat the flags a user namespace locked, or it is refused.
        let kept = statvfs(path.as_path())
            .map(|stat| locked_flags(stat.flags()))
            .map_err(fail(path, "statvfs"))?;
        mount(
            None::<&str>,
            path.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
            None::<&str>,
        )
        .map_err(fail(path, "remount read-only"))?;
    }
    Ok(())
}

/// Enters a new user and mount namespace, mapping this process's uid and gid to themselves so
/// file ownership looks the same inside.
fn enter_user_namespace() -> Result<(), (&'static str, nix::Error)> {
    let (uid, gid) = (getuid(), getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
        .map_err(|err| ("unshare user and mount namespaces", err))?;
    let write = |file: &'static str, text: String| {
        std::fs::write(file, text).map_err(|err| {
            (
                file,
                nix::Error::from_raw(err.raw_os_error().unwrap_or(nix::libc::EPERM)),
            )
        })
    };
    write("/proc/self/setgroups", "deny".to_string())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
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
