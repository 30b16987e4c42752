//! What people add to threads beside their conversation — sections that order threads for a
//! command center, attachments a thread owns, and git metadata a client corrects — kept in
//! `$KEEL_HOME/thread-organizer.sqlite`, so it survives restarts and is shared by every Keel
//! process on the home. Unlike the thread index this is not a cache: nothing else holds it.

mod attachments;
mod git_info;
mod sections;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::Connection;

pub use attachments::AttachmentPage;
pub use sections::{PINNED_SECTION_ID, SectionMembership};

/// The store's file under the Keel home.
pub const THREAD_ORGANIZER_FILE: &str = "thread-organizer.sqlite";

/// Why a section, attachment or metadata change could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ThreadOrganizerError {
    /// The database failed.
    #[error("thread organizer {path}: {source}")]
    Database {
        /// The store's file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The Keel home could not be created.
    #[error("thread organizer {path}: {source}")]
    Io {
        /// The store's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A stored value could not be read back.
    #[error("thread organizer {path}: a stored value is unreadable: {message}")]
    Unreadable {
        /// The store's file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No section has this id.
    #[error("thread section not found: {0}")]
    SectionNotFound(String),
    /// The built-in Pinned section cannot be changed this way.
    #[error("the built-in pinned section cannot be {0}")]
    PinnedSection(&'static str),
    /// A section needs a name.
    #[error("section name must not be empty")]
    EmptySectionName,
    /// `beforeThreadId` names a thread that is not in the target section.
    #[error("before thread {before} is not in section {section}")]
    BeforeNotInSection {
        /// The thread named.
        before: String,
        /// The section the thread was moved to.
        section: String,
    },
    /// No thread has this id (checked by the caller, which knows the threads).
    #[error("thread not found: {0}")]
    ThreadNotFound(String),
    /// A page cursor this store did not hand out.
    #[error("invalid pagination cursor")]
    InvalidCursor,
}

/// Sections, attachments and git metadata of one Keel home's threads.
pub struct ThreadOrganizer {
    path: PathBuf,
    db: Mutex<Connection>,
}

impl ThreadOrganizer {
    /// Opens (creating as needed) the store of `keel_home`. Blocking.
    pub fn open(keel_home: &Path) -> Result<Self, ThreadOrganizerError> {
        let path = keel_home.join(THREAD_ORGANIZER_FILE);
        let fail = |source| ThreadOrganizerError::Database {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(keel_home).map_err(|source| ThreadOrganizerError::Io {
            path: path.clone(),
            source,
        })?;
        let db = Connection::open(&path).map_err(fail)?;
        db.busy_timeout(Duration::from_secs(30)).map_err(fail)?;
        db.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(fail)?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS sections (
                 id TEXT PRIMARY KEY,
                 name TEXT NOT NULL,
                 appearance TEXT
             );
             CREATE TABLE IF NOT EXISTS section_members (
                 thread_id TEXT PRIMARY KEY,
                 section_id TEXT NOT NULL,
                 position INTEGER NOT NULL,
                 entered_at INTEGER NOT NULL
             );
             CREATE INDEX IF NOT EXISTS members_by_section
                 ON section_members(section_id, position);
             CREATE TABLE IF NOT EXISTS attachments (
                 id TEXT PRIMARY KEY,
                 thread_id TEXT NOT NULL,
                 attachment_type TEXT NOT NULL,
                 identity_key TEXT NOT NULL,
                 payload TEXT NOT NULL,
                 created_at INTEGER NOT NULL,
                 UNIQUE(thread_id, attachment_type, identity_key)
             );
             CREATE INDEX IF NOT EXISTS attachments_by_identity
                 ON attachments(attachment_type, identity_key);
             CREATE TABLE IF NOT EXISTS git_info (
                 thread_id TEXT PRIMARY KEY,
                 sha TEXT,
                 branch TEXT,
                 origin_url TEXT
             );",
        )
        .map_err(fail)?;
        Ok(Self {
            path,
            db: Mutex::new(db),
        })
    }

    /// Forgets everything kept for a deleted thread. Blocking.
    pub fn forget_thread(
        &self,
        thread: keel_protocol::ConversationId,
    ) -> Result<(), ThreadOrganizerError> {
        let mut db = self.lock();
        let tx = db.transaction().map_err(|err| self.fail(err))?;
        for table in ["section_members", "attachments", "git_info"] {
            tx.execute(
                &format!("DELETE FROM {table} WHERE thread_id = ?1"),
                [thread.to_string()],
            )
            .map_err(|err| self.fail(err))?;
        }
        tx.commit().map_err(|err| self.fail(err))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self, source: rusqlite::Error) -> ThreadOrganizerError {
        ThreadOrganizerError::Database {
            path: self.path.clone(),
            source,
        }
    }

    fn unreadable(&self, err: serde_json::Error) -> ThreadOrganizerError {
        ThreadOrganizerError::Unreadable {
            path: self.path.clone(),
            message: err.to_string(),
        }
    }
}

/// Now, in Unix seconds.
fn now() -> i64 {
    chrono::Utc::now().timestamp()
}
