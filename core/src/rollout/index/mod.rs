//! The thread index: a SQLite file (`KEEL_HOME/thread-index.sqlite`) that lists every
//! rollout with its summary and the text of its messages, so `thread/list` and
//! `thread/search` answer from one query instead of reading every rollout on disk.
//!
//! The rollouts stay the only source of truth: the index is a cache that anyone may delete.
//! Each query first brings it up to date — cheaply: a directory's entries are re-read only
//! when its modification time changed (a rollout was created, moved or removed there), and
//! the files writers noted as being written (see `live`) are re-read when they grew. A
//! missing, unreadable or older-format index is rebuilt from the rollouts.

#[cfg(feature = "thread-index")]
mod list_sql;
mod live;
#[cfg(feature = "thread-index")]
mod scan;
#[cfg(feature = "thread-index")]
mod store;

pub(crate) use live::note_live;
#[cfg(feature = "thread-index")]
pub(crate) use store::index_exists;
#[cfg(feature = "thread-index")]
pub use store::{ThreadIndex, ThreadIndexError};
