//! Snapshots kept across sessions, under `KEEL_HOME/shell-snapshots/KEY/`: `snapshot.sh` (the
//! captured environment, mode 0600 — a profile may export secrets) and `manifest.json` (every
//! file the login shell read, with its size and modification time). `KEY` is a hash of the
//! shell and the environment that shapes a profile (`HOME`, `USER`, `PATH`, `SHELL`,
//! `LANG`, `LC_ALL`). An entry is used only while every file it names is as recorded
//! (present or absent); entries untouched for 30 days are removed. `rm -r
//! "$KEEL_HOME/shell-snapshots"` drops them all.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Variables whose value changes what a login profile sets up, in the key.
const KEY_VARIABLES: &[&str] = &["HOME", "USER", "PATH", "SHELL", "LANG", "LC_ALL"];
/// Entries not used for this long are removed.
const STALE_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);
const SNAPSHOT_FILE: &str = "snapshot.sh";
const MANIFEST_FILE: &str = "manifest.json";

/// One entry's capture in this process: held while capturing, so sessions that need the same
/// snapshot at once (a server's first turns, an agent job's workers) wait for one capture
/// instead of each running the login profile into the same partial files. It keeps a failed
/// capture's profile files, so the waiters do not retry while those are unchanged.
pub(super) type CaptureSlot = Arc<CaptureLock>;

/// What a capture slot guards: a failed capture's profile files, if the last one failed.
pub(super) type CaptureLock = tokio::sync::Mutex<Option<Vec<FileStamp>>>;

/// The slots of captures some session is in or waiting for, by entry directory.
static CAPTURES: LazyLock<std::sync::Mutex<HashMap<PathBuf, Weak<CaptureLock>>>> =
    LazyLock::new(Default::default);

/// A file the shell read, as it was when the snapshot was taken: `None` when it did not
/// exist (creating it must invalidate the snapshot too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct FileStamp {
    path: PathBuf,
    state: Option<(u64, u128)>,
}

impl FileStamp {
    /// The file as it is now.
    pub(super) fn now(path: PathBuf) -> Self {
        let state = std::fs::metadata(&path).ok().map(|meta| {
            let modified = meta
                .modified()
                .ok()
                .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |since| since.as_nanos());
            (meta.len(), modified)
        });
        Self { path, state }
    }

    /// The file.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is still as stamped.
    pub(super) fn current(&self) -> bool {
        Self::now(self.path.clone()) == *self
    }
}

/// What an entry records besides the snapshot.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    shell: String,
    files: Vec<FileStamp>,
}

/// The cache directory of one Keel home.
#[derive(Debug, Clone)]
pub(super) struct SnapshotCache {
    root: PathBuf,
}

impl SnapshotCache {
    pub(super) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// The key of `shell` started with `env`.
    pub(super) fn key(shell: &str, env: &BTreeMap<String, String>) -> String {
        let mut hash = Sha256::new();
        hash.update(shell.as_bytes());
        for name in KEY_VARIABLES {
            hash.update([0]);
            hash.update(name.as_bytes());
            hash.update([b'=']);
            hash.update(env.get(*name).map(String::as_bytes).unwrap_or_default());
        }
        hash.finalize()
            .iter()
            .take(12)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// The capture slot of `key` in this process, shared by every session asking meanwhile.
    pub(super) fn capture_slot(&self, key: &str) -> CaptureSlot {
        let entry = self.root.join(key);
        let mut slots = CAPTURES.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|_, slot| slot.strong_count() > 0);
        if let Some(slot) = slots.get(&entry).and_then(Weak::upgrade) {
            return slot;
        }
        let slot = CaptureSlot::default();
        slots.insert(entry, Arc::downgrade(&slot));
        slot
    }

    /// The entry's directory (created, private to the user, with its parent).
    pub(super) fn entry_dir(&self, key: &str) -> std::io::Result<PathBuf> {
        let dir = self.root.join(key);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        Ok(dir)
    }

    /// A new empty file only the user can read (whatever stood at `path` is replaced, never
    /// followed), for a capture or a manifest to be written into.
    pub(super) fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
        let _ = std::fs::remove_file(path);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
    }

    /// The snapshot of `key`, when one was stored and every file it read is unchanged; its
    /// files are returned too, to watch during the session.
    pub(super) fn load(&self, key: &str) -> Option<(PathBuf, Vec<FileStamp>)> {
        let dir = self.root.join(key);
        let manifest: Manifest =
            serde_json::from_slice(&std::fs::read(dir.join(MANIFEST_FILE)).ok()?).ok()?;
        let snapshot = dir.join(SNAPSHOT_FILE);
        if !snapshot.is_file() || !manifest.files.iter().all(FileStamp::current) {
            return None;
        }
        // Used: not stale.
        let _ = std::fs::File::open(&dir).and_then(|entry| entry.set_modified(SystemTime::now()));
        Some((snapshot, manifest.files))
    }

    /// Makes the captured `partial` the snapshot of `key`, read from `files`; returns where it
    /// is. Old entries are pruned on the way.
    pub(super) fn store(
        &self,
        key: &str,
        shell: &str,
        partial: &Path,
        files: Vec<FileStamp>,
    ) -> std::io::Result<PathBuf> {
        let dir = self.entry_dir(key)?;
        let manifest = serde_json::to_vec(&Manifest {
            shell: shell.to_string(),
            files,
        })
        .map_err(std::io::Error::other)?;
        let manifest_partial = dir.join(format!("{MANIFEST_FILE}.partial"));
        Self::private_file(&manifest_partial)?.write_all(&manifest)?;
        let snapshot = dir.join(SNAPSHOT_FILE);
        std::fs::rename(partial, &snapshot)?;
        std::fs::rename(&manifest_partial, dir.join(MANIFEST_FILE))?;
        self.prune();
        Ok(snapshot)
    }

    /// Removes entries not used for [`STALE_AFTER`].
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let stale = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > STALE_AFTER);
            if stale && let Err(err) = std::fs::remove_dir_all(entry.path()) {
                tracing::debug!(entry = %entry.path().display(), %err, "could not prune a shell snapshot");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A link planted where a snapshot is about to be written is replaced, not followed: the
    /// profile's exports never land in a file elsewhere.
    #[test]
    fn a_planted_link_is_replaced_not_followed() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let elsewhere = dir.path().join("elsewhere.txt");
        std::fs::write(&elsewhere, "untouched")?;
        let partial = dir.path().join("snapshot.partial");
        std::os::unix::fs::symlink(&elsewhere, &partial)?;
        SnapshotCache::private_file(&partial)?.write_all(b"export SECRET=1\n")?;
        assert_eq!(std::fs::read_to_string(&elsewhere)?, "untouched");
        assert!(
            !std::fs::symlink_metadata(&partial)?
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::metadata(&partial)?.permissions().mode() & 0o777,
            0o600
        );
        Ok(())
    }

    #[test]
    fn an_entry_is_used_until_a_file_it_read_changes() -> std::io::Result<()> {
        let home = tempfile::tempdir()?;
        let profile = home.path().join(".bashrc");
        let absent = home.path().join(".bash_login");
        std::fs::write(&profile, "export A=1\n")?;
        let cache = SnapshotCache::new(home.path().join("cache"));
        let env = BTreeMap::from([("HOME".to_string(), "/h".to_string())]);
        let key = SnapshotCache::key("bash", &env);
        let partial = cache.entry_dir(&key)?.join("snapshot.sh.partial");
        SnapshotCache::private_file(&partial)?;
        std::fs::write(&partial, "export A=1\n")?;
        let files = vec![
            FileStamp::now(profile.clone()),
            FileStamp::now(absent.clone()),
        ];
        let stored = cache.store(&key, "bash", &partial, files)?;
        assert_eq!(
            std::fs::metadata(&stored)?.permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(cache.load(&key).map(|(path, _)| path), Some(stored));
        // Another HOME is another entry.
        let other = BTreeMap::from([("HOME".to_string(), "/other".to_string())]);
        assert_ne!(SnapshotCache::key("bash", &other), key);
        // A file that appears, or one that changes, invalidates it.
        std::fs::write(&absent, "x")?;
        assert_eq!(cache.load(&key), None);
        std::fs::remove_file(&absent)?;
        assert!(cache.load(&key).is_some());
        std::fs::write(&profile, "export A=22\n")?;
        assert_eq!(cache.load(&key), None);
        Ok(())
    }
}
