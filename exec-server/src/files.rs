//! Reads for the `fs.v1` extension, shared by the server and by an engine reading its own
//! host's files, so a local and a remote environment answer alike.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

use keel_protocol::exec_server::{
    FileListEntry, FileListParams, FileListResponse, FileReadParams, FileReadResponse,
    FileStatParams, FileStatResponse,
};

/// The largest file `fs/read` returns: its base64, with the message around it, fits one
/// 16 MiB message.
pub const MAX_READ_BYTES: u64 = 12 * 1024 * 1024 - 64 * 1024;

/// `fs/read` on this host: the file's bytes, `missing`, `tooLarge` or `unreadable`.
/// The caller checks that the path is absolute.
pub fn read(params: &FileReadParams) -> FileReadResponse {
    let limit = params
        .max_bytes
        .map_or(MAX_READ_BYTES, |max| max.min(MAX_READ_BYTES));
    // Only regular files: opening a FIFO or a device could block or read a stream. Opened
    // without blocking, then checked on the open file, so nothing swapped in between counts.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&params.path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return FileReadResponse::Missing;
        }
        Err(err) => return unreadable(&err),
    };
    let size = match file.metadata() {
        Ok(meta) if meta.is_dir() => {
            return FileReadResponse::Unreadable {
                message: "is a directory".to_string(),
            };
        }
        Ok(meta) if !meta.is_file() => {
            return FileReadResponse::Unreadable {
                message: keel_apply_patch::not_a_regular_file(&meta)
                    .unwrap_or_else(|| "not a regular file".to_string()),
            };
        }
        Ok(meta) => meta.len(),
        Err(err) => return unreadable(&err),
    };
    if size > limit {
        return FileReadResponse::TooLarge { size };
    }
    // The size may change under us: read one byte past the limit to notice growth.
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    if let Err(err) = file.take(limit + 1).read_to_end(&mut data) {
        return unreadable(&err);
    }
    if data.len() as u64 > limit {
        return FileReadResponse::TooLarge {
            size: data.len() as u64,
        };
    }
    FileReadResponse::Read {
        data_base64: data.into(),
    }
}

/// `fs/stat` on this host, following symlinks. The caller checks that the path is absolute.
pub fn stat(params: &FileStatParams) -> FileStatResponse {
    match std::fs::metadata(&params.path) {
        Ok(meta) => FileStatResponse::Found {
            is_file: meta.is_file(),
            is_directory: meta.is_dir(),
            size: meta.len(),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => FileStatResponse::Missing,
        Err(err) => FileStatResponse::Unreadable {
            message: err.to_string(),
        },
    }
}

/// The most entries `fs/list` returns.
pub const MAX_LIST_ENTRIES: usize = 10_000;

/// `fs/list` on this host: the directory's entries by name, links followed to tell what each
/// is. The caller checks that the path is absolute.
pub fn list(params: &FileListParams) -> FileListResponse {
    let entries = match std::fs::read_dir(&params.path) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return FileListResponse::Missing;
        }
        Err(err) => {
            return FileListResponse::Unreadable {
                message: err.to_string(),
            };
        }
    };
    let mut listed: Vec<FileListEntry> = entries
        .flatten()
        .map(|entry| {
            let meta = std::fs::metadata(entry.path()).ok();
            FileListEntry {
                file_name: entry.file_name().to_string_lossy().into_owned(),
                is_directory: meta.as_ref().is_some_and(std::fs::Metadata::is_dir),
                is_file: meta.as_ref().is_some_and(std::fs::Metadata::is_file),
            }
        })
        .collect();
    listed.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    listed.truncate(MAX_LIST_ENTRIES);
    FileListResponse::Listed { entries: listed }
}

fn unreadable(err: &std::io::Error) -> FileReadResponse {
    FileReadResponse::Unreadable {
        message: err.to_string(),
    }
}
