//! How a read state changes, whichever store keeps it.

use keel_protocol::ConversationId;
use keel_protocol::app_server::{ThreadReadState, ThreadReadStateOperation, ThreadUnreadPosition};

/// Where the file store keeps read states, under the Keel home.
pub(super) const READ_STATE_DIR: &str = "read-state";

/// The state of a thread never marked: nothing unread, an `initial:` revision.
pub(super) fn initial(id: ConversationId) -> ThreadReadState {
    ThreadReadState {
        first_unread: None,
        revision: format!("initial:{id}"),
    }
}

/// A fresh revision for a changed state.
pub(super) fn new_revision() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A turn finished with results nobody has seen: unread from the earliest such turn on.
pub(super) fn turn_completed(state: &mut ThreadReadState, turn_id: &str) {
    if state.first_unread.is_none() {
        state.first_unread = Some(ThreadUnreadPosition::Turn {
            turn_id: turn_id.to_string(),
        });
    }
}

/// Turns were dropped: what was unread went with them.
pub(super) fn reverted(state: &mut ThreadReadState) {
    state.first_unread = None;
}

/// A person's `read` or `unread`.
pub(super) fn apply(state: &mut ThreadReadState, operation: ThreadReadStateOperation) {
    state.first_unread = match operation {
        ThreadReadStateOperation::Read => None,
        ThreadReadStateOperation::Unread => Some(ThreadUnreadPosition::ThreadStart),
    };
}
