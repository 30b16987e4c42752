//! Messages waiting for a thread (`keel queue`, `thread/queue/*`): kept in order, per thread,
//! in `$KEEL_HOME/thread-queue.sqlite`, so they survive restarts and are shared by every Keel
//! process on the home; each is delivered as the thread's next turn once it is idle.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use keel_protocol::ConversationId;
use keel_protocol::app_server::UserInput;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};

/// The store's file under the Keel home.
pub const THREAD_QUEUE_FILE: &str = "thread-queue.sqlite";

/// One message waiting for a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedMessage {
    /// Its id (a UUID).
    pub id: String,
    /// What the turn will be given.
    pub input: Vec<UserInput>,
    /// The id the client gave the message.
    pub client_user_message_id: String,
    /// Metadata the client attached, kept with the message.
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// Why the queue could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum ThreadQueueError {
    /// The database failed.
    #[error("thread queue {path}: {source}")]
    Database {
        /// The store's file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored message could not be read back.
    #[error("thread queue {path}: a stored message is unreadable: {message}")]
    Unreadable {
        /// The store's file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The Keel home could not be created.
    #[error("thread queue {path}: {source}")]
    Io {
        /// The store's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A reorder did not name every queued message exactly once.
    #[error("queue reorder must include every queued submission exactly once")]
    NotAPermutation,
}

/// The columns a message is read back from, in [`Row`]'s order.
const MESSAGE_COLUMNS: &str = "id, client_user_message_id, input, metadata";

/// A message's columns as stored: id, client id, input and metadata (JSON).
type Row = (String, String, String, Option<String>);

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

/// The queues of one Keel home.
pub struct ThreadQueue {
    path: PathBuf,
    db: Mutex<Connection>,
}

impl ThreadQueue {
    /// Opens (creating as needed) the queues of `keel_home`. Blocking.
    pub fn open(keel_home: &Path) -> Result<Self, ThreadQueueError> {
        let path = keel_home.join(THREAD_QUEUE_FILE);
        let fail = |source| ThreadQueueError::Database {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(keel_home).map_err(|source| ThreadQueueError::Io {
            path: path.clone(),
            source,
        })?;
        let db = Connection::open(&path).map_err(fail)?;
        db.busy_timeout(Duration::from_secs(30)).map_err(fail)?;
        db.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(fail)?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS queued (
                 id TEXT PRIMARY KEY,
                 thread_id TEXT NOT NULL,
                 position INTEGER NOT NULL,
                 client_user_message_id TEXT NOT NULL,
                 input TEXT NOT NULL,
                 metadata TEXT,
                 created_at_ms INTEGER NOT NULL
             );
             CREATE INDEX IF NOT EXISTS queued_by_thread ON queued(thread_id, position);",
        )
        .map_err(fail)?;
        Ok(Self {
            path,
            db: Mutex::new(db),
        })
    }

    /// Appends a message to `thread`'s queue. Blocking.
    pub fn add(
        &self,
        thread: ConversationId,
        client_user_message_id: &str,
        input: Vec<UserInput>,
        metadata: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<QueuedMessage, ThreadQueueError> {
        let message = QueuedMessage {
            id: uuid::Uuid::now_v7().to_string(),
            input,
            client_user_message_id: client_user_message_id.to_string(),
            metadata,
        };
        let (input, metadata) = self.encode(&message)?;
        let now = chrono::Utc::now().timestamp_millis();
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        tx.execute(
            "INSERT INTO queued(id, thread_id, position, client_user_message_id, input, metadata,
                                created_at_ms)
             VALUES (?1, ?2,
                     (SELECT coalesce(max(position), -1) + 1 FROM queued WHERE thread_id = ?2),
                     ?3, ?4, ?5, ?6)",
            params![
                message.id,
                thread.to_string(),
                message.client_user_message_id,
                input,
                metadata,
                now
            ],
        )
        .map_err(|err| self.fail(err))?;
        tx.commit().map_err(|err| self.fail(err))?;
        Ok(message)
    }

    /// `thread`'s messages in delivery order, `limit` from `offset`. Blocking.
    pub fn list(
        &self,
        thread: ConversationId,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<QueuedMessage>, ThreadQueueError> {
        let db = self.lock();
        let mut statement = db
            .prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM queued
                 WHERE thread_id = ?1 ORDER BY position LIMIT ?2 OFFSET ?3"
            ))
            .map_err(|err| self.fail(err))?;
        let rows = statement
            .query_map(
                params![
                    thread.to_string(),
                    i64::try_from(limit).unwrap_or(i64::MAX),
                    i64::try_from(offset).unwrap_or(i64::MAX)
                ],
                read_row,
            )
            .map_err(|err| self.fail(err))?;
        let mut found = Vec::new();
        for row in rows {
            found.push(self.decode(row.map_err(|err| self.fail(err))?)?);
        }
        Ok(found)
    }

    /// How many messages wait for `thread`. Blocking.
    pub fn len(&self, thread: ConversationId) -> Result<usize, ThreadQueueError> {
        let db = self.lock();
        let count: i64 = db
            .query_row(
                "SELECT count(*) FROM queued WHERE thread_id = ?1",
                params![thread.to_string()],
                |row| row.get(0),
            )
            .map_err(|err| self.fail(err))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// How many messages wait, over every thread. Blocking.
    pub fn total_len(&self) -> Result<usize, ThreadQueueError> {
        let db = self.lock();
        let count: i64 = db
            .query_row("SELECT count(*) FROM queued", [], |row| row.get(0))
            .map_err(|err| self.fail(err))?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Removes message `id` of `thread`; whether it was there. Blocking.
    pub fn delete(&self, thread: ConversationId, id: &str) -> Result<bool, ThreadQueueError> {
        let db = self.lock();
        let removed = db
            .execute(
                "DELETE FROM queued WHERE thread_id = ?1 AND id = ?2",
                params![thread.to_string(), id],
            )
            .map_err(|err| self.fail(err))?;
        Ok(removed > 0)
    }

    /// Puts `thread`'s messages in the order of `ids`, which must name each exactly once.
    /// Blocking.
    pub fn reorder(&self, thread: ConversationId, ids: &[String]) -> Result<(), ThreadQueueError> {
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        let mut current: Vec<String> = {
            let mut statement = tx
                .prepare("SELECT id FROM queued WHERE thread_id = ?1")
                .map_err(|err| self.fail(err))?;
            let rows = statement
                .query_map(params![thread.to_string()], |row| row.get(0))
                .map_err(|err| self.fail(err))?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(|err| self.fail(err))?
        };
        let mut wanted = ids.to_vec();
        current.sort();
        wanted.sort();
        if current != wanted {
            return Err(ThreadQueueError::NotAPermutation);
        }
        for (position, id) in ids.iter().enumerate() {
            tx.execute(
                "UPDATE queued SET position = ?1 WHERE id = ?2",
                params![i64::try_from(position).unwrap_or(i64::MAX), id],
            )
            .map_err(|err| self.fail(err))?;
        }
        tx.commit().map_err(|err| self.fail(err))
    }

    /// Replaces message `id`'s input (and its metadata, when `metadata` is non-empty);
    /// `None` when `thread` has no such message. Blocking.
    pub fn update(
        &self,
        thread: ConversationId,
        id: &str,
        input: Vec<UserInput>,
        metadata: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<Option<QueuedMessage>, ThreadQueueError> {
        let Some(mut message) = self.find(thread, id)? else {
            return Ok(None);
        };
        message.input = input;
        if let Some(metadata) = metadata.filter(|metadata| !metadata.is_empty()) {
            message.metadata = Some(metadata);
        }
        let (input, metadata) = self.encode(&message)?;
        let db = self.lock();
        db.execute(
            "UPDATE queued SET input = ?1, metadata = ?2 WHERE thread_id = ?3 AND id = ?4",
            params![input, metadata, thread.to_string(), id],
        )
        .map_err(|err| self.fail(err))?;
        Ok(Some(message))
    }

    /// Takes message `id` (or the first one, with `None`) off `thread`'s queue, to deliver
    /// it; `None` when there is no such message. Blocking.
    pub fn take(
        &self,
        thread: ConversationId,
        id: Option<&str>,
    ) -> Result<Option<QueuedMessage>, ThreadQueueError> {
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        let row = tx
            .query_row(
                &format!(
                    "SELECT {MESSAGE_COLUMNS} FROM queued
                     WHERE thread_id = ?1 AND (?2 IS NULL OR id = ?2)
                     ORDER BY position LIMIT 1"
                ),
                params![thread.to_string(), id],
                read_row,
            )
            .optional()
            .map_err(|err| self.fail(err))?;
        let Some(row) = row else {
            return Ok(None);
        };
        tx.execute("DELETE FROM queued WHERE id = ?1", params![row.0])
            .map_err(|err| self.fail(err))?;
        tx.commit().map_err(|err| self.fail(err))?;
        self.decode(row).map(Some)
    }

    fn find(
        &self,
        thread: ConversationId,
        id: &str,
    ) -> Result<Option<QueuedMessage>, ThreadQueueError> {
        let db = self.lock();
        let row = db
            .query_row(
                &format!("SELECT {MESSAGE_COLUMNS} FROM queued WHERE thread_id = ?1 AND id = ?2"),
                params![thread.to_string(), id],
                read_row,
            )
            .optional()
            .map_err(|err| self.fail(err))?;
        drop(db);
        row.map(|row| self.decode(row)).transpose()
    }

    fn encode(
        &self,
        message: &QueuedMessage,
    ) -> Result<(String, Option<String>), ThreadQueueError> {
        let unreadable = |err: serde_json::Error| ThreadQueueError::Unreadable {
            path: self.path.clone(),
            message: err.to_string(),
        };
        let input = serde_json::to_string(&message.input).map_err(unreadable)?;
        let metadata = message
            .metadata
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(unreadable)?;
        Ok((input, metadata))
    }

    fn decode(&self, row: Row) -> Result<QueuedMessage, ThreadQueueError> {
        let (id, client_user_message_id, input, metadata) = row;
        let unreadable = |err: serde_json::Error| ThreadQueueError::Unreadable {
            path: self.path.clone(),
            message: err.to_string(),
        };
        Ok(QueuedMessage {
            id,
            input: serde_json::from_str(&input).map_err(unreadable)?,
            client_user_message_id,
            metadata: metadata
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(unreadable)?,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self, source: rusqlite::Error) -> ThreadQueueError {
        ThreadQueueError::Database {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_depth_counts_every_threads_messages() -> Result<(), Box<dyn std::error::Error>> {
        let home = tempfile::tempdir()?;
        let queue = ThreadQueue::open(home.path())?;
        assert_eq!(queue.total_len()?, 0);
        let (one, two) = (ConversationId::new(), ConversationId::new());
        let text = || {
            vec![UserInput::Text {
                text: "next".into(),
                text_elements: Vec::new(),
            }]
        };
        queue.add(one, "a", text(), None)?;
        queue.add(one, "b", text(), None)?;
        queue.add(two, "c", text(), None)?;
        assert_eq!(
            (queue.len(one)?, queue.len(two)?, queue.total_len()?),
            (2, 1, 3)
        );
        Ok(())
    }
}
