//! Small records kept beside a thread (a person's read position, say) in a store every server
//! shares, changed only when they still read what the writer last saw.

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::ThreadCatalogError;

/// What a conditional write found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteSwap {
    /// The note read what was expected and now holds the new value.
    Done,
    /// Someone changed it first: what it reads now (`None`: no note).
    Changed(Option<String>),
}

/// Per-thread notes, for a catalog several servers share.
pub trait ThreadNotes: Send + Sync {
    /// Note `key` of thread `id`; `None` when there is none.
    fn note(
        &self,
        id: ConversationId,
        key: &'static str,
    ) -> BoxFuture<'_, Result<Option<String>, ThreadCatalogError>>;

    /// Sets note `key` of thread `id` to `value` (`None` removes it) if it still reads
    /// `expected` (`None`: no note yet).
    fn swap_note(
        &self,
        id: ConversationId,
        key: &'static str,
        expected: Option<String>,
        value: Option<String>,
    ) -> BoxFuture<'_, Result<NoteSwap, ThreadCatalogError>>;
}
