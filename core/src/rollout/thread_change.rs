//! What another server did to a thread, so a server that has the thread loaded can tell its
//! own clients (stores several servers share announce these; files never do).

use keel_protocol::ConversationId;
use serde::{Deserialize, Serialize};

/// A change one server made to a thread in a shared store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadChange {
    /// The thread.
    pub id: ConversationId,
    /// What happened.
    pub kind: ThreadChangeKind,
    /// The process that did it: its server name, `#`, and a part of its own.
    pub by: String,
}

/// What happened to a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ThreadChangeKind {
    /// It was named (the catalog has the name).
    Renamed,
    /// It was moved to the archive.
    Archived,
    /// It came back from the archive.
    Unarchived,
    /// It was deleted.
    Deleted,
    /// A server opened it to continue it: any other server's copy is stale and may no longer
    /// append.
    Opened,
}
