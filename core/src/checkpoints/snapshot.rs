//! A workspace's files at one moment: each tracked or untracked, not ignored file with its
//! size, modification time and content hash, the contents kept once under their hash.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Files larger than this are listed, not kept: they cannot be restored.
pub(crate) const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// A workspace with more files than this is snapshotted up to here (the rest is not kept).
pub(crate) const MAX_FILES: usize = 50_000;

/// One file as a snapshot saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub size: u64,
    /// Nanoseconds since the epoch, to skip re-reading files that did not change.
    pub mtime_ns: u128,
    /// The content's SHA-256; `None` when the file is too large to keep.
    pub hash: Option<String>,
}

impl Entry {
    /// Whether two sightings are of the same content.
    pub(crate) fn same_content(&self, other: &Entry) -> bool {
        match (&self.hash, &other.hash) {
            (Some(a), Some(b)) => a == b,
            _ => self.size == other.size && self.mtime_ns == other.mtime_ns,
        }
    }
}

/// Files by path relative to the workspace root.
pub(crate) type Snapshot = BTreeMap<PathBuf, Entry>;

/// The workspace's files: git's tracked and untracked, not ignored files inside a
/// repository (the index and history are only read), every file but `.git` elsewhere.
fn list_files(root: &Path) -> Vec<PathBuf> {
    let listed = std::process::Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    if let Ok(output) = listed
        && output.status.success()
    {
        let mut files: Vec<PathBuf> = output
            .stdout
            .split(|byte| *byte == 0)
            .filter(|name| !name.is_empty())
            .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
            .collect();
        files.sort();
        files.dedup();
        files.truncate(MAX_FILES);
        return files;
    }
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let relative = dir.join(entry.file_name());
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && entry.file_name() != ".git" => stack.push(relative),
                Ok(kind) if kind.is_file() => files.push(relative),
                _ => {}
            }
            if files.len() >= MAX_FILES {
                files.sort();
                return files;
            }
        }
    }
    files.sort();
    files
}

/// Takes a snapshot of `root`, keeping new contents under `objects`; files whose size and
/// time match `previous` are not read again.
pub(crate) fn take(root: &Path, objects: &Path, previous: &Snapshot) -> std::io::Result<Snapshot> {
    std::fs::create_dir_all(objects)?;
    let mut snapshot = Snapshot::new();
    for relative in list_files(root) {
        let path = root.join(&relative);
        // Links are not followed: a restore never writes through one.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |elapsed| elapsed.as_nanos());
        let size = meta.len();
        if let Some(known) = previous.get(&relative)
            && known.size == size
            && known.mtime_ns == mtime_ns
        {
            snapshot.insert(relative, known.clone());
            continue;
        }
        let hash = if size > MAX_FILE_BYTES {
            None
        } else {
            match std::fs::read(&path) {
                Ok(bytes) => Some(keep(objects, &bytes)?),
                Err(_) => continue,
            }
        };
        snapshot.insert(
            relative,
            Entry {
                size,
                mtime_ns,
                hash,
            },
        );
    }
    Ok(snapshot)
}

/// Stores `bytes` under their hash (once); returns the hash.
fn keep(objects: &Path, bytes: &[u8]) -> std::io::Result<String> {
    let hash = Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<String>();
    let path = objects.join(&hash);
    if !path.exists() {
        let partial = objects.join(format!("{hash}.partial-{}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&partial, &path)?;
    }
    Ok(hash)
}
