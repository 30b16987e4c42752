//! Bringing the index up to date with the rollouts on disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, Transaction, params};

use super::live::LIVE_FILE;
use crate::rollout::{ARCHIVED_SESSIONS_DIR, SESSIONS_DIR};

/// Separates messages in a thread's indexed text (a character messages do not contain).
pub(super) const SEPARATOR: &str = "\n\u{1e}\n";

/// A file noted as being written stops being watched once unchanged for this long (its
/// writer notes it again if it grows later).
const LIVE_FOR: Duration = Duration::from_secs(24 * 3600);

/// A directory changed less than this long ago is read again at the next refresh: its
/// modification time may not move for a change made within the same clock tick.
const SETTLED_AFTER: Duration = Duration::from_secs(2);

/// A file's size and modification time (nanoseconds), to see whether it changed.
pub(super) fn stamp(meta: &std::fs::Metadata) -> (i64, i64) {
    let size = i64::try_from(meta.len()).unwrap_or(i64::MAX);
    (size, mtime_ns(meta))
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| {
            i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
        })
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Brings every rollout under both roots of `home` into the index. Returns the writers'
/// notes file it took, to remove once the transaction is committed.
pub(super) fn refresh(tx: &Transaction<'_>, home: &Path) -> rusqlite::Result<Option<PathBuf>> {
    let taken = take_live_notes(tx, home)?;
    let mut found = Found::default();
    for root in [SESSIONS_DIR, ARCHIVED_SESSIONS_DIR] {
        reconcile_tree(tx, &home.join(root), root, &mut found)?;
    }
    // Indexed oldest first, so index order follows creation (file names start with it):
    // searches list newest first by that order. A rollout that moved (archived or back)
    // keeps its place.
    found
        .pending
        .sort_by(|a, b| a.path.file_name().cmp(&b.path.file_name()));
    for file in found.pending {
        index_file(
            tx,
            &file.path,
            &file.dir,
            file.root,
            &file.meta,
            &mut found.freed,
        )?;
    }
    refresh_live(tx, home)?;
    Ok(taken)
}

/// What a walk found: rollouts to read, and the index positions of rollouts that are gone
/// (by thread id), for one that reappears elsewhere.
#[derive(Default)]
struct Found {
    pending: Vec<Pending>,
    freed: HashMap<String, i64>,
}

/// Moves the writers' notes into the `live` table (the notes file is renamed first, so a
/// writer appending meanwhile starts a new one); returns the renamed file.
fn take_live_notes(tx: &Transaction<'_>, home: &Path) -> rusqlite::Result<Option<PathBuf>> {
    let notes = home.join(LIVE_FILE);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let taken = home.join(format!("{LIVE_FILE}.{}.{nanos}", std::process::id()));
    if std::fs::rename(&notes, &taken).is_err() {
        return Ok(None);
    }
    let listed = std::fs::read_to_string(&taken).unwrap_or_default();
    for line in listed.lines().filter(|line| !line.is_empty()) {
        tx.execute(
            "INSERT OR IGNORE INTO live(path) VALUES (?1)",
            params![line],
        )?;
    }
    Ok(Some(taken))
}

/// A rollout found new or changed, to be read into the index.
struct Pending {
    path: PathBuf,
    dir: String,
    root: &'static str,
    meta: std::fs::Metadata,
}

/// Walks the directories under `root`, re-reading only those whose modification time moved;
/// the new or changed rollouts found are added to `pending`.
fn reconcile_tree(
    tx: &Transaction<'_>,
    root: &Path,
    root_name: &'static str,
    found: &mut Found,
) -> rusqlite::Result<()> {
    // Every known directory at once: an unchanged tree costs one query and a stat per
    // directory.
    let known_dirs = known_dirs(tx)?;
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for (path, (parent, _)) in &known_dirs {
        if let Some(parent) = parent {
            children
                .entry(parent.as_str())
                .or_default()
                .push(path.as_str());
        }
    }
    let mut stack = vec![(root.to_path_buf(), None::<String>)];
    while let Some((dir, parent)) = stack.pop() {
        let dir_text = text(&dir);
        let meta = match std::fs::metadata(&dir) {
            Ok(meta) if meta.is_dir() => meta,
            _ => {
                if known_dirs.contains_key(&dir_text) {
                    forget_dir(tx, &dir_text)?;
                }
                continue;
            }
        };
        let mtime = mtime_ns(&meta);
        let known_children = children.get(dir_text.as_str()).cloned().unwrap_or_default();
        if known_dirs.get(&dir_text).map(|(_, stored)| *stored) == Some(mtime) {
            for child in known_children {
                stack.push((PathBuf::from(child), Some(dir_text.clone())));
            }
            continue;
        }
        let Some((files, subdirs)) = read_dir(&dir) else {
            // Unreadable for now: nothing is forgotten, and it is tried again next time.
            for child in known_children {
                stack.push((PathBuf::from(child), Some(dir_text.clone())));
            }
            continue;
        };
        let subdir_texts: Vec<String> = subdirs.iter().map(|d| text(d)).collect();
        for known in known_children {
            if !subdir_texts.iter().any(|present| present == known) {
                forget_dir(tx, known)?;
            }
        }
        let mut known = known_files(tx, &dir_text)?;
        for file in files {
            let file_text = text(&file);
            let recorded = known.remove(&file_text);
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            if recorded != Some(stamp(&meta)) {
                found.pending.push(Pending {
                    path: file,
                    dir: dir_text.clone(),
                    root: root_name,
                    meta,
                });
            }
        }
        for gone in known.keys() {
            if let Some((id, rowid)) = delete_thread(tx, gone)? {
                found.freed.insert(id, rowid);
            }
        }
        // A time this recent may not have ticked for a change made right after the read:
        // such a directory is read again next time.
        let settled = meta
            .modified()
            .ok()
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= SETTLED_AFTER);
        tx.execute(
            "INSERT INTO dirs(path, parent, mtime_ns) VALUES (?1, ?2, ?3)
             ON CONFLICT(path) DO UPDATE SET parent = excluded.parent, mtime_ns = excluded.mtime_ns",
            params![dir_text, parent, if settled { mtime } else { -1 }],
        )?;
        for subdir in subdirs {
            stack.push((subdir, Some(dir_text.clone())));
        }
    }
    Ok(())
}

/// Every directory the index knows, with its parent and modification time.
fn known_dirs(tx: &Transaction<'_>) -> rusqlite::Result<HashMap<String, (Option<String>, i64)>> {
    let mut statement = tx.prepare_cached("SELECT path, parent, mtime_ns FROM dirs")?;
    let rows = statement.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, (row.get(1)?, row.get(2)?)))
    })?;
    rows.collect()
}

/// The rollout files and the subdirectories of `dir` (unreadable entries are skipped);
/// `None` when the directory cannot be read.
fn read_dir(dir: &Path) -> Option<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut subdirs = Vec::new();
    let entries = std::fs::read_dir(dir).ok()?;
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => subdirs.push(path),
            Ok(kind) if kind.is_file() && path.extension().is_some_and(|e| e == "jsonl") => {
                files.push(path);
            }
            _ => {}
        }
    }
    Some((files, subdirs))
}

fn known_files(tx: &Transaction<'_>, dir: &str) -> rusqlite::Result<HashMap<String, (i64, i64)>> {
    let mut statement =
        tx.prepare_cached("SELECT path, size, mtime_ns FROM threads WHERE dir = ?1")?;
    let rows = statement.query_map(params![dir], |row| {
        Ok((row.get::<_, String>(0)?, (row.get(1)?, row.get(2)?)))
    })?;
    rows.collect()
}

/// Forgets a directory that is gone, with everything that was under it.
fn forget_dir(tx: &Transaction<'_>, dir: &str) -> rusqlite::Result<()> {
    let under = "(dir = ?1 OR substr(dir, 1, length(?1) + 1) = ?1 || '/')";
    tx.execute(
        &format!("DELETE FROM texts WHERE rowid IN (SELECT rowid FROM threads WHERE {under})"),
        params![dir],
    )?;
    tx.execute(&format!("DELETE FROM threads WHERE {under}"), params![dir])?;
    tx.execute(
        "DELETE FROM dirs WHERE path = ?1 OR substr(path, 1, length(?1) + 1) = ?1 || '/'",
        params![dir],
    )?;
    Ok(())
}

/// Forgets one rollout; returns its thread id and index position, if it was indexed.
pub(super) fn delete_thread(
    tx: &Transaction<'_>,
    path: &str,
) -> rusqlite::Result<Option<(String, i64)>> {
    let known: Option<(String, i64)> = tx
        .query_row(
            "SELECT id, rowid FROM threads WHERE path = ?1",
            params![path],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    if let Some((_, rowid)) = &known {
        tx.execute("DELETE FROM texts WHERE rowid = ?1", params![rowid])?;
        tx.execute("DELETE FROM threads WHERE rowid = ?1", params![rowid])?;
    }
    Ok(known)
}

/// Reads one rollout into the index (its summary and messages); a file that is not a Keel
/// rollout is left out, and one that cannot be opened now is watched to be tried again. A
/// thread whose rollout moved takes back its place in `freed`.
pub(super) fn index_file(
    tx: &Transaction<'_>,
    path: &Path,
    dir: &str,
    root: &str,
    meta: &std::fs::Metadata,
    freed: &mut HashMap<String, i64>,
) -> rusqlite::Result<()> {
    let path_text = text(path);
    let (size, mtime) = stamp(meta);
    if std::fs::File::open(path).is_err() {
        tx.execute(
            "INSERT OR IGNORE INTO live(path) VALUES (?1)",
            params![path_text],
        )?;
        return Ok(());
    }
    let Some(summary) = crate::rollout::summary::summarise_blocking(path) else {
        return delete_thread(tx, &path_text).map(|_| ());
    };
    let position = freed.remove(&summary.id.to_string());
    let body = crate::rollout::search::message_texts(path).join(SEPARATOR);
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    tx.execute(
        "INSERT INTO threads(path, dir, root, file_name, id, created_at, updated_at, cwd,
                             preview, name, has_turns, model, size, mtime_ns, rowid,
                             source, source_kind, parent_id, model_provider)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                 ?16, ?17, ?18, ?19)
         ON CONFLICT(path) DO UPDATE SET dir = excluded.dir, root = excluded.root,
             file_name = excluded.file_name, id = excluded.id,
             created_at = excluded.created_at, updated_at = excluded.updated_at,
             cwd = excluded.cwd, preview = excluded.preview, name = excluded.name,
             has_turns = excluded.has_turns, model = excluded.model, size = excluded.size,
             mtime_ns = excluded.mtime_ns, source = excluded.source,
             source_kind = excluded.source_kind, parent_id = excluded.parent_id,
             model_provider = excluded.model_provider",
        params![
            path_text,
            dir,
            root,
            file_name,
            summary.id.to_string(),
            summary.created_at,
            summary.updated_at,
            text(&summary.cwd),
            summary.preview,
            summary.name,
            summary.has_turns,
            summary.model,
            size,
            mtime,
            position,
            serde_json::to_string(&summary.source).unwrap_or_default(),
            summary.source.kind().as_str(),
            summary.source.parent_thread_id(),
            summary.model_provider,
        ],
    )?;
    let rowid: i64 = tx.query_row(
        "SELECT rowid FROM threads WHERE path = ?1",
        params![path_text],
        |row| row.get(0),
    )?;
    tx.execute("DELETE FROM texts WHERE rowid = ?1", params![rowid])?;
    tx.execute(
        "INSERT INTO texts(rowid, name, body) VALUES (?1, ?2, ?3)",
        params![rowid, summary.name.unwrap_or_default(), body],
    )?;
    Ok(())
}

/// Re-reads the noted files that changed; stops watching those long unchanged.
fn refresh_live(tx: &Transaction<'_>, home: &Path) -> rusqlite::Result<()> {
    let noted: Vec<String> = {
        let mut statement = tx.prepare_cached("SELECT path FROM live")?;
        let rows = statement.query_map([], |row| row.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for path_text in noted {
        let path = PathBuf::from(&path_text);
        let Ok(meta) = std::fs::metadata(&path) else {
            tx.execute("DELETE FROM live WHERE path = ?1", params![path_text])?;
            continue;
        };
        let recorded: Option<(i64, i64)> = tx
            .query_row(
                "SELECT size, mtime_ns FROM threads WHERE path = ?1",
                params![path_text],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        if recorded != Some(stamp(&meta)) {
            if let Some((dir, root)) = place(home, &path) {
                index_file(tx, &path, &dir, root, &meta, &mut HashMap::new())?;
            }
        } else if meta.modified().ok().and_then(|at| at.elapsed().ok()) >= Some(LIVE_FOR) {
            tx.execute("DELETE FROM live WHERE path = ?1", params![path_text])?;
        }
    }
    Ok(())
}

/// The directory (as stored) and root of a rollout under `home`, if it is under one.
pub(super) fn place(home: &Path, path: &Path) -> Option<(String, &'static str)> {
    // A note naming `sessions/../elsewhere` is not under the roots, whatever it starts with.
    if path
        .components()
        .any(|part| matches!(part, std::path::Component::ParentDir))
    {
        return None;
    }
    let root = [SESSIONS_DIR, ARCHIVED_SESSIONS_DIR]
        .into_iter()
        .find(|root| path.starts_with(home.join(root)))?;
    Some((text(path.parent()?), root))
}
