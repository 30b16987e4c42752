//! Reading the files a patch changes: regular files only, bounded. A path that names a FIFO
//! would block the reader forever, and a device (`/dev/zero`) would stream without end, so
//! the file is opened without blocking and checked on the open descriptor before a byte is
//! read; whatever is swapped in between the path check and the open counts as what it is.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// The largest file a patch reads: what the exec-server can carry in one message (its
/// base64 and the message around it fit 16 MiB), so a local and a remote patch agree.
pub const MAX_PATCHED_FILE_BYTES: u64 = 12 * 1024 * 1024 - 64 * 1024;

/// The contents of the regular file at `path`, `None` when nothing is there; an error naming
/// what the path is when it is not a regular file, or when it is larger than `limit`.
pub fn read_regular_file(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    // Refused before opening: opening some devices has effects of its own.
    match std::fs::metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
        Ok(metadata) => not_regular(&metadata)?,
    }
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(errno.into()),
    };
    let file = File::from(fd);
    let metadata = file.metadata()?;
    not_regular(&metadata)?;
    if metadata.len() > limit {
        return Err(too_large(metadata.len(), limit));
    }
    // The file may grow while it is read: one byte past the limit tells.
    let mut data = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut data)?;
    let read = u64::try_from(data.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(too_large(read, limit));
    }
    Ok(Some(data))
}

/// [`read_regular_file`] for text: UTF-8, or an error saying it is not.
pub fn read_regular_text(path: &Path, limit: u64) -> io::Result<Option<String>> {
    read_regular_file(path, limit)?
        .map(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
        })
        .transpose()
}

/// An error when `metadata` is not a regular file (or a directory, which callers report
/// themselves).
fn not_regular(metadata: &std::fs::Metadata) -> io::Result<()> {
    match not_a_regular_file(metadata) {
        None => Ok(()),
        Some(what) => Err(io::Error::new(io::ErrorKind::InvalidInput, what)),
    }
}

/// What is wrong with reading `metadata`'s file as a file ("it is a FIFO, not a regular
/// file"); `None` for a regular file or a directory.
pub fn not_a_regular_file(metadata: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    let what = if kind.is_file() || kind.is_dir() {
        return None;
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Some(format!("it is {what}, not a regular file"))
}

fn too_large(size: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("it is {size} bytes, over the limit of {limit} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_large_files_are_refused_without_blocking() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status()?;
        assert!(made.success());
        let err = read_regular_file(&fifo, 10).err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some("it is a FIFO, not a regular file"));
        let err = read_regular_file(Path::new("/dev/zero"), 10)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("it is a character device, not a regular file")
        );
        let link = dir.path().join("zero-link");
        std::os::unix::fs::symlink("/dev/zero", &link)?;
        assert!(read_regular_file(&link, 10).is_err());
        let big = dir.path().join("big");
        std::fs::write(&big, "x".repeat(11))?;
        let err = read_regular_file(&big, 10).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("it is 11 bytes, over the limit of 10 bytes")
        );
        assert_eq!(read_regular_text(&big, 11)?, Some("x".repeat(11)));
        assert_eq!(read_regular_file(&dir.path().join("none"), 10)?, None);
        Ok(())
    }
}
