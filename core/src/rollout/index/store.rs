//! The index's database: opening (and rebuilding), and the queries behind `thread/list` and
//! `thread/search`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use keel_protocol::app_server::SessionSource;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::scan::{self, SEPARATOR};
use crate::rollout::summary::{ConversationSummary, SearchHit, SearchPage};
use crate::rollout::thread_filter::{ListCursor, ThreadFilter};
use crate::rollout::{ARCHIVED_SESSIONS_DIR, ConversationsPage, SESSIONS_DIR};

/// The index file under the Keel home.
const INDEX_FILE: &str = "thread-index.sqlite";

/// Whether `keel_home` has an index file (built by an earlier listing).
pub(crate) fn index_exists(keel_home: &Path) -> bool {
    keel_home.join(INDEX_FILE).is_file()
}

/// Bumped whenever the tables change: an index of another version is rebuilt.
const SCHEMA_VERSION: i64 = 3;

/// Why the index could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ThreadIndexError {
    /// The database failed.
    #[error("thread index {path}: {source}")]
    Database {
        /// The index file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
}

/// The index of one Keel home's rollouts (see the module docs).
pub struct ThreadIndex {
    home: PathBuf,
    path: PathBuf,
    db: Mutex<Connection>,
}

const SUMMARY_COLUMNS: &str = "t.path, t.id, t.created_at, t.updated_at, t.cwd, t.preview, \
     t.name, t.has_turns, t.model, t.source, t.model_provider";

impl ThreadIndex {
    /// Opens (creating or rebuilding as needed) the index of `keel_home`. Blocking.
    pub fn open(keel_home: &Path) -> Result<Self, ThreadIndexError> {
        let path = keel_home.join(INDEX_FILE);
        let fail = |source| ThreadIndexError::Database {
            path: path.clone(),
            source,
        };
        let db = match connect(&path) {
            Ok(db) => db,
            Err(err) if is_damaged(&err) => {
                // A cache that cannot be read is thrown away and built again.
                tracing::warn!(path = %path.display(), "rebuilding the thread index: {err}");
                for suffix in ["", "-wal", "-shm"] {
                    let file = PathBuf::from(format!("{}{suffix}", path.display()));
                    if let Err(err) = std::fs::remove_file(&file)
                        && err.kind() != std::io::ErrorKind::NotFound
                    {
                        tracing::warn!("cannot remove {}: {err}", file.display());
                    }
                }
                connect(&path).map_err(fail)?
            }
            // Busy (another process is building it) or unreachable: not a reason to throw
            // it away.
            Err(err) => return Err(fail(err)),
        };
        forget_other_homes(&db, keel_home).map_err(fail)?;
        Ok(Self {
            home: keel_home.to_path_buf(),
            path,
            db: Mutex::new(db),
        })
    }

    /// Brings the index up to date with the rollouts on disk. Blocking; every query does it.
    pub fn refresh(&self) -> Result<(), ThreadIndexError> {
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        let taken = scan::refresh(&tx, &self.home).map_err(|err| self.fail(err))?;
        tx.commit().map_err(|err| self.fail(err))?;
        // The notes are in the index now (not before: a failed refresh keeps them).
        if let Some(taken) = taken
            && let Err(err) = std::fs::remove_file(&taken)
        {
            tracing::debug!("cannot remove {}: {err}", taken.display());
        }
        Ok(())
    }

    /// Threads that had a turn and pass `filter`, a page at a time. Blocking.
    pub fn list(&self, filter: &ThreadFilter) -> Result<ConversationsPage, ThreadIndexError> {
        self.refresh()?;
        let query = super::list_sql::ListSql::of(filter, SUMMARY_COLUMNS, root(filter.archived));
        let db = self.lock();
        let mut statement = db
            .prepare_cached(&query.sql)
            .map_err(|err| self.fail(err))?;
        let rows = statement
            .query_map(rusqlite::params_from_iter(query.params.iter()), |row| {
                summary(row)
            })
            .map_err(|err| self.fail(err))?;
        let mut found: Vec<ConversationSummary> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|err| self.fail(err))?;
        let next_cursor = (found.len() > filter.limit).then(|| {
            found.truncate(filter.limit);
            found
                .last()
                .map(|last| ListCursor::after(last, filter.sort).encode())
        });
        Ok(ConversationsPage {
            items: found,
            next_cursor: next_cursor.flatten(),
        })
    }

    /// Threads that had a turn whose user or assistant messages, or name, contain `term`
    /// (case-insensitive), newest first, each with a snippet. `cursor` is the previous page's
    /// `next_cursor`. Blocking.
    pub fn search(
        &self,
        term: &str,
        archived: bool,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<SearchPage, ThreadIndexError> {
        self.refresh()?;
        let term = term.to_lowercase();
        let before = cursor.and_then(|cursor| cursor.parse::<i64>().ok());
        // Three characters and more use the trigram index; shorter terms scan the texts.
        let (condition, pattern) = if term.chars().count() >= 3 {
            (
                "texts MATCH ?1",
                format!("\"{}\"", term.replace('"', "\"\"")),
            )
        } else {
            let escaped = term
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            (
                "(texts.body LIKE ?1 ESCAPE '\\' OR texts.name LIKE ?1 ESCAPE '\\')",
                format!("%{escaped}%"),
            )
        };
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS}, texts.rowid, texts.body FROM texts
             JOIN threads t ON t.rowid = texts.rowid
             WHERE {condition} AND t.root = ?2 AND t.has_turns = 1
               AND (?3 IS NULL OR texts.rowid < ?3)
             ORDER BY texts.rowid DESC"
        );
        let db = self.lock();
        let mut statement = db.prepare_cached(&sql).map_err(|err| self.fail(err))?;
        let mut rows = statement
            .query(params![pattern, root(archived), before])
            .map_err(|err| self.fail(err))?;
        let mut items = Vec::new();
        let mut next_cursor = None;
        while let Some(row) = rows.next().map_err(|err| self.fail(err))? {
            let rowid: i64 = row.get(11).map_err(|err| self.fail(err))?;
            if items.len() == limit {
                next_cursor = Some((rowid + 1).to_string());
                break;
            }
            let found = summary(row).map_err(|err| self.fail(err))?;
            let body: String = row.get(12).map_err(|err| self.fail(err))?;
            let snippet = body
                .split(SEPARATOR)
                .find_map(|message| crate::rollout::search::snippet(message, &term))
                .or_else(|| {
                    found
                        .name
                        .clone()
                        .filter(|name| name.to_lowercase().contains(&term))
                });
            // The index matched without case folding as Rust does it (rare scripts): skip.
            if let Some(snippet) = snippet {
                items.push(SearchHit {
                    summary: found,
                    snippet,
                });
            }
        }
        Ok(SearchPage { items, next_cursor })
    }

    /// The rollout file of thread `id` (live, or archived), brought up to date first when the
    /// index does not know it or knows a file that is gone. Blocking.
    pub fn find(
        &self,
        id: keel_protocol::ConversationId,
        archived: bool,
    ) -> Result<Option<PathBuf>, ThreadIndexError> {
        let lookup = || -> Result<Option<PathBuf>, ThreadIndexError> {
            let db = self.lock();
            let mut statement = db
                .prepare_cached("SELECT path FROM threads WHERE id = ?1 AND root = ?2 LIMIT 1")
                .map_err(|err| self.fail(err))?;
            let mut rows = statement
                .query(params![id.to_string(), root(archived)])
                .map_err(|err| self.fail(err))?;
            match rows.next().map_err(|err| self.fail(err))? {
                Some(row) => Ok(Some(PathBuf::from(
                    row.get::<_, String>(0).map_err(|err| self.fail(err))?,
                ))),
                None => Ok(None),
            }
        };
        if let Some(path) = lookup()?.filter(|path| path.is_file()) {
            return Ok(Some(path));
        }
        self.refresh()?;
        lookup()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self, source: rusqlite::Error) -> ThreadIndexError {
        ThreadIndexError::Database {
            path: self.path.clone(),
            source,
        }
    }
}

fn root(archived: bool) -> &'static str {
    if archived {
        ARCHIVED_SESSIONS_DIR
    } else {
        SESSIONS_DIR
    }
}

fn summary(row: &Row<'_>) -> rusqlite::Result<ConversationSummary> {
    let id: String = row.get(1)?;
    let id = id
        .parse()
        .map_err(|err: keel_protocol::ConversationIdParseError| {
            rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(err))
        })?;
    Ok(ConversationSummary {
        path: PathBuf::from(row.get::<_, String>(0)?),
        id,
        created_at: row.get(2)?,
        updated_at: row.get(3)?,
        cwd: PathBuf::from(row.get::<_, String>(4)?),
        preview: row.get(5)?,
        name: row.get(6)?,
        has_turns: row.get(7)?,
        model: row.get(8)?,
        source: serde_json::from_str(&row.get::<_, String>(9)?).unwrap_or(SessionSource::Unknown),
        model_provider: row.get(10)?,
    })
}

/// Whether an error says the file is not a usable database (as opposed to busy).
fn is_damaged(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// Empties an index built for another Keel home (one copied or moved here: its rows name the
/// other home's files, and would list every thread twice), so the next refresh builds it for
/// this one.
fn forget_other_homes(db: &Connection, keel_home: &Path) -> rusqlite::Result<()> {
    let home = keel_home.to_string_lossy().into_owned();
    let recorded: Option<String> = db
        .query_row("SELECT value FROM meta WHERE key = 'home'", [], |row| {
            row.get(0)
        })
        .optional()?;
    if recorded.as_deref() == Some(home.as_str()) {
        return Ok(());
    }
    db.execute_batch("BEGIN IMMEDIATE;")?;
    // Checked again under the write lock: another process may have just claimed it.
    let claimed = (|| {
        let recorded: Option<String> = db
            .query_row("SELECT value FROM meta WHERE key = 'home'", [], |row| {
                row.get(0)
            })
            .optional()?;
        if recorded.is_some() && recorded.as_deref() != Some(home.as_str()) {
            tracing::info!(
                was = recorded.as_deref().unwrap_or_default(),
                "the thread index was built for another Keel home; rebuilding it"
            );
            db.execute_batch(
                "DELETE FROM threads; DELETE FROM dirs; DELETE FROM live; DELETE FROM texts;",
            )?;
        }
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('home', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![home],
        )
        .map(|_| ())
    })();
    match claimed {
        Ok(()) => db.execute_batch("COMMIT;"),
        Err(err) => {
            if let Err(rollback) = db.execute_batch("ROLLBACK;") {
                tracing::debug!("rolling back: {rollback}");
            }
            Err(err)
        }
    }
}

/// Opens the database, creating the tables (or rebuilding them for another version).
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let db = Connection::open(path)?;
    db.busy_timeout(Duration::from_secs(30))?;
    db.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    db.execute_batch("PRAGMA synchronous = NORMAL;")?;
    let version: i64 = db.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version != SCHEMA_VERSION {
        // Checked again under the write lock: another process may have just built it.
        db.execute_batch("BEGIN IMMEDIATE;")?;
        let version: i64 = db.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if version == SCHEMA_VERSION {
            db.execute_batch("COMMIT;")?;
            return Ok(db);
        }
        db.execute_batch(&format!(
            "DROP TABLE IF EXISTS threads;
             DROP TABLE IF EXISTS dirs;
             DROP TABLE IF EXISTS live;
             DROP TABLE IF EXISTS texts;
             DROP TABLE IF EXISTS meta;
             CREATE TABLE threads (
                 rowid INTEGER PRIMARY KEY,
                 path TEXT NOT NULL UNIQUE,
                 dir TEXT NOT NULL,
                 root TEXT NOT NULL,
                 file_name TEXT NOT NULL,
                 id TEXT NOT NULL,
                 created_at TEXT NOT NULL,
                 updated_at TEXT NOT NULL,
                 cwd TEXT NOT NULL,
                 preview TEXT NOT NULL,
                 name TEXT,
                 has_turns INTEGER NOT NULL,
                 model TEXT,
                 size INTEGER NOT NULL,
                 mtime_ns INTEGER NOT NULL,
                 source TEXT NOT NULL,
                 source_kind TEXT NOT NULL,
                 parent_id TEXT,
                 model_provider TEXT
             );
             CREATE INDEX threads_by_name ON threads(root, file_name);
             CREATE INDEX threads_by_update ON threads(root, updated_at, file_name);
             CREATE INDEX threads_by_dir ON threads(dir);
             CREATE INDEX threads_by_id ON threads(id);
             CREATE INDEX threads_by_parent ON threads(parent_id);
             CREATE TABLE dirs (
                 path TEXT PRIMARY KEY,
                 parent TEXT,
                 mtime_ns INTEGER NOT NULL
             );
             CREATE INDEX dirs_by_parent ON dirs(parent);
             CREATE TABLE live (path TEXT PRIMARY KEY);
             CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE VIRTUAL TABLE texts USING fts5(name, body, tokenize = 'trigram');
             PRAGMA user_version = {SCHEMA_VERSION};
             COMMIT;"
        ))?;
    }
    // A damaged file fails here, and is rebuilt by the caller.
    db.query_row("SELECT count(*) FROM dirs", [], |_| Ok(()))?;
    Ok(db)
}
