//! Directories reached without following any symlink, so a write lands exactly where the
//! caller checked, even if someone swaps a directory for a link in the meantime.
//!
//! The applier resolves every path to the place it really leads (see [`crate::resolve_links`])
//! and lets its caller judge that place. Between that judgement and the write, a process
//! running beside the agent could replace a directory on the way with a symlink. Opening each
//! directory of the resolved path one component at a time with `O_NOFOLLOW` and then working
//! only relative to the opened descriptor (`openat`, `renameat`, `unlinkat`) leaves no such
//! window: a link that appears is refused, and a directory renamed after it was opened is
//! still the directory that was checked.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// An open directory and the path it was reached by.
#[derive(Debug)]
pub(crate) struct PinnedDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Why a directory could not be pinned.
#[derive(Debug)]
pub(crate) enum PinError {
    /// A component of the path is a symlink (it was not when the path was resolved).
    Link(PathBuf),
    /// Any other failure, with the path it happened on.
    Io(PathBuf, io::Error),
}

impl PinnedDir {
    /// Opens `path` (already resolved: it should hold no symlink) without following links.
    /// With `create`, missing directories are made; each one made is pushed to `created`
    /// (outermost first) so a rollback can remove it.
    pub(crate) fn open(
        path: &Path,
        create: bool,
        created: &mut Vec<(PinnedDir, OsString)>,
    ) -> Result<Self, PinError> {
        let start = if path.is_absolute() { "/" } else { "." };
        let fd = rustix::fs::openat(rustix::fs::CWD, start, dir_flags(), Mode::empty())
            .map_err(|errno| PinError::Io(PathBuf::from(start), errno.into()))?;
        let mut dir = PinnedDir {
            fd,
            path: PathBuf::from(start),
        };
        for component in path.components() {
            let name = match component {
                Component::Normal(name) => name,
                Component::CurDir | Component::RootDir | Component::Prefix(_) => continue,
                // A resolved path has no `..`; refusing it keeps the walk beneath `start`.
                Component::ParentDir => {
                    return Err(PinError::Io(
                        path.to_path_buf(),
                        io::Error::new(io::ErrorKind::InvalidInput, "path contains `..`"),
                    ));
                }
            };
            dir = match dir.child(name) {
                Ok(child) => child,
                Err(PinError::Io(_, err)) if create && err.kind() == io::ErrorKind::NotFound => {
                    let child_path = dir.path.join(name);
                    rustix::fs::mkdirat(&dir.fd, name, Mode::from_bits_truncate(0o777))
                        .map_err(|errno| PinError::Io(child_path.clone(), errno.into()))?;
                    let parent = dir
                        .try_clone()
                        .map_err(|err| PinError::Io(child_path, err))?;
                    created.push((parent, name.to_os_string()));
                    dir.child(name)?
                }
                Err(err) => return Err(err),
            };
        }
        Ok(dir)
    }

    fn try_clone(&self) -> io::Result<PinnedDir> {
        Ok(PinnedDir {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// The path this directory was reached by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the subdirectory `name`, refusing a symlink.
    fn child(&self, name: &OsStr) -> Result<PinnedDir, PinError> {
        let path = self.path.join(name);
        match rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty()) {
            Ok(fd) => Ok(PinnedDir { fd, path }),
            Err(errno) if errno == Errno::LOOP || errno == Errno::NOTDIR => {
                if self.is_symlink(name) {
                    Err(PinError::Link(path))
                } else {
                    Err(PinError::Io(path, errno.into()))
                }
            }
            Err(errno) => Err(PinError::Io(path, errno.into())),
        }
    }

    /// Whether `name` exists here (a symlink counts, whatever it points to).
    pub(crate) fn exists(&self, name: &OsStr) -> io::Result<bool> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(errno) => Err(errno.into()),
        }
    }

    fn is_symlink(&self, name: &OsStr) -> bool {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|stat| {
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Symlink
        })
    }

    /// The permission bits of the file `name`, if it is a regular file here.
    pub(crate) fn mode_of(&self, name: &OsStr) -> Option<Mode> {
        rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .filter(|stat| {
                rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::RegularFile
            })
            .map(|stat| Mode::from_raw_mode(stat.st_mode))
    }

    /// Creates `name` here; fails if anything, a symlink included, already has that name.
    pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            flags | OFlags::CLOEXEC,
            Mode::from_bits_truncate(0o666),
        )?;
        Ok(File::from(fd))
    }

    /// Renames `from` onto `to`, both in this directory; replaces `to` itself, never what a
    /// link named `to` points at.
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Removes the file (or link) `name`.
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes the empty directory `name`.
    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }
}

/// Sets the permission bits of an open file.
pub(crate) fn set_mode(file: &File, mode: Mode) -> io::Result<()> {
    Ok(rustix::fs::fchmod(file, mode)?)
}

fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}
