//! Per-turn checkpoints of the workspace, so reverting a thread can also put its files back:
//! before and after each turn, the workspace's files are recorded (contents kept once, by
//! hash, under `KEEL_HOME/checkpoints/<thread>/`). The user's git index and history are only
//! read. A restore puts back the files a range of turns changed — and refuses, changing
//! nothing, when a file was changed since by someone else or is too large to have been kept.

mod snapshot;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use snapshot::{Entry, Snapshot};

/// Where a thread's checkpoints live under the Keel home.
pub fn checkpoint_dir(keel_home: &Path, thread_id: &str) -> PathBuf {
    keel_home.join("checkpoints").join(thread_id)
}

/// Why files could not be restored; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// A turn has no checkpoint (recorded before checkpoints, or in another workspace).
    #[error("turn {0} has no file checkpoint, so its files cannot be restored")]
    NoCheckpoint(String),
    /// Files changed since the thread's last turn, by someone else.
    #[error("files changed since the thread's last turn, by someone else: {}; nothing was restored", list(.0))]
    ChangedSince(Vec<PathBuf>),
    /// Files too large to have been kept.
    #[error("files too large to have been kept cannot be restored: {}; nothing was restored", list(.0))]
    NotKept(Vec<PathBuf>),
    /// Files whose place in the working directory now leads through a symbolic link (or is
    /// not a plain relative path): writing there could land outside it.
    #[error("files that would be written through a symbolic link cannot be restored: {}; nothing was restored", list(.0))]
    ThroughLink(Vec<PathBuf>),
    /// Reading or writing failed.
    #[error("restoring files failed: {0}")]
    Io(String),
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One turn's record: the workspace before and after it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TurnRecord {
    root: PathBuf,
    before: Snapshot,
    #[serde(default)]
    after: Option<Snapshot>,
}

/// A conversation's checkpoints, and the last snapshot (so unchanged files are not re-read).
#[derive(Debug)]
pub(crate) struct Checkpoints {
    dir: PathBuf,
    last: Mutex<Snapshot>,
}

impl Checkpoints {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            last: Mutex::new(Snapshot::new()),
        }
    }

    fn record_path(&self, turn_id: &str) -> PathBuf {
        self.dir.join("turns").join(format!("{turn_id}.json"))
    }

    fn snapshot(&self, root: &Path) -> std::io::Result<Snapshot> {
        let previous = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let taken = snapshot::take(root, &self.dir.join("objects"), &previous)?;
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = taken.clone();
        Ok(taken)
    }

    /// Records the workspace before turn `turn_id`.
    pub(crate) fn before_turn(&self, turn_id: &str, root: &Path) -> std::io::Result<()> {
        let before = self.snapshot(root)?;
        let record = TurnRecord {
            root: root.to_path_buf(),
            before,
            after: None,
        };
        write_record(&self.record_path(turn_id), &record)
    }

    /// Records the workspace after turn `turn_id`.
    pub(crate) fn after_turn(&self, turn_id: &str) -> std::io::Result<()> {
        let path = self.record_path(turn_id);
        let mut record = read_record(&path)?;
        record.after = Some(self.snapshot(&record.root)?);
        write_record(&path, &record)
    }
}

fn write_record(path: &Path, record: &TurnRecord) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let text = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    std::fs::write(path, text)
}

fn read_record(path: &Path) -> std::io::Result<TurnRecord> {
    let text = std::fs::read(path)?;
    serde_json::from_slice(&text).map_err(std::io::Error::other)
}

/// Puts the workspace back as it was before the first of `turns` (in order), undoing them
/// all; turns without a checkpoint (a compaction, a review) changed no files. Refuses,
/// changing nothing, when a file those turns changed was changed since by someone else, or
/// was too large to keep. Returns the files restored or removed.
pub fn restore_before(dir: &Path, turns: &[String]) -> Result<Vec<PathBuf>, RestoreError> {
    let record = |turn: &String| read_record(&dir.join("turns").join(format!("{turn}.json"))).ok();
    let Some(first) = turns.iter().find_map(record) else {
        return Err(RestoreError::NoCheckpoint(
            turns.first().cloned().unwrap_or_default(),
        ));
    };
    let (last_turn, last) = turns
        .iter()
        .rev()
        .find_map(|turn| record(turn).map(|found| (turn.clone(), found)))
        .ok_or_else(|| RestoreError::NoCheckpoint(String::new()))?;
    let first_turn = turns.first().cloned().unwrap_or_default();
    let after = last.after.ok_or(RestoreError::NoCheckpoint(last_turn))?;
    if first.root != last.root {
        return Err(RestoreError::NoCheckpoint(first_turn));
    }
    let root = first.root;
    let objects = dir.join("objects");
    // What the turns changed: every path whose content differs between the two ends.
    let mut changed: BTreeMap<PathBuf, (Option<&Entry>, Option<&Entry>)> = BTreeMap::new();
    for (path, entry) in &first.before {
        if !after.get(path).is_some_and(|now| now.same_content(entry)) {
            changed.insert(path.clone(), (Some(entry), after.get(path)));
        }
    }
    for (path, entry) in &after {
        if !first.before.contains_key(path) {
            changed.insert(path.clone(), (None, Some(entry)));
        }
    }
    let current =
        snapshot::take(&root, &objects, &after).map_err(|err| RestoreError::Io(err.to_string()))?;
    let mut conflicts = Vec::new();
    let mut not_kept = Vec::new();
    for (path, (before, left)) in &changed {
        let now = current.get(path);
        let untouched = match (left, now) {
            (Some(left), Some(now)) => left.same_content(now),
            (None, None) => true,
            _ => false,
        };
        if !untouched {
            conflicts.push(path.clone());
        }
        if before.is_some_and(|before| before.hash.is_none()) {
            not_kept.push(path.clone());
        }
    }
    if !conflicts.is_empty() {
        return Err(RestoreError::ChangedSince(conflicts));
    }
    if !not_kept.is_empty() {
        return Err(RestoreError::NotKept(not_kept));
    }
    let linked: Vec<PathBuf> = changed
        .keys()
        .filter(|path| leads_through_link(&root, path))
        .cloned()
        .collect();
    if !linked.is_empty() {
        return Err(RestoreError::ThroughLink(linked));
    }
    let mut restored = Vec::new();
    for (path, (before, _)) in changed {
        let target = root.join(&path);
        let result = match before.and_then(|entry| entry.hash.as_ref()) {
            Some(hash) => put_back(&objects.join(hash), &target),
            None => match std::fs::remove_file(&target) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
        result.map_err(|err| RestoreError::Io(format!("{}: {err}", target.display())))?;
        restored.push(path);
    }
    Ok(restored)
}

/// Whether writing `relative` under `root` could leave it: a component that is not a plain
/// name, or a directory on the way that is now a link (or not a directory).
fn leads_through_link(root: &Path, relative: &Path) -> bool {
    if !relative
        .components()
        .all(|part| matches!(part, std::path::Component::Normal(_)))
    {
        return true;
    }
    let mut walked = root.to_path_buf();
    let parents: Vec<_> = relative.components().collect();
    for part in &parents[..parents.len().saturating_sub(1)] {
        walked.push(part);
        match std::fs::symlink_metadata(&walked) {
            Ok(meta) if meta.file_type().is_symlink() || !meta.is_dir() => return true,
            Ok(_) => {}
            // Missing from here on: the restore creates real directories.
            Err(_) => return false,
        }
    }
    false
}

/// Writes a kept content back to `target` (replacing a link there, never following it).
fn put_back(object: &Path, target: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(object)?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if std::fs::symlink_metadata(target).is_ok_and(|meta| meta.file_type().is_symlink()) {
        std::fs::remove_file(target)?;
    }
    std::fs::write(target, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restore whose file lies under a directory someone replaced with a link to elsewhere
    /// is refused: nothing is written outside the working directory.
    #[test]
    fn a_restore_never_writes_through_a_planted_link() -> std::io::Result<()> {
        let home = tempfile::tempdir()?;
        let root = tempfile::tempdir()?;
        let outside = tempfile::tempdir()?;
        std::fs::create_dir(root.path().join("sub"))?;
        std::fs::write(root.path().join("sub/s.txt"), "before\n")?;
        let dir = home.path().join("checkpoints/t");
        let checkpoints = Checkpoints::new(dir.clone());
        checkpoints.before_turn("turn-1", root.path())?;
        // The turn removes the directory; then a link to elsewhere takes its place.
        std::fs::remove_dir_all(root.path().join("sub"))?;
        checkpoints.after_turn("turn-1")?;
        std::os::unix::fs::symlink(outside.path(), root.path().join("sub"))?;
        let refused = restore_before(&dir, &["turn-1".to_string()]);
        assert_eq!(
            refused,
            Err(RestoreError::ThroughLink(vec![PathBuf::from("sub/s.txt")]))
        );
        assert!(!outside.path().join("s.txt").exists());
        // Without the link the file comes back.
        std::fs::remove_file(root.path().join("sub"))?;
        let restored = restore_before(&dir, &["turn-1".to_string()]);
        assert_eq!(restored, Ok(vec![PathBuf::from("sub/s.txt")]));
        assert_eq!(
            std::fs::read_to_string(root.path().join("sub/s.txt"))?,
            "before\n"
        );
        Ok(())
    }
}
