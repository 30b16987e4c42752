//! A conversation the streaming tools drive: its event buffer, held approvals and the stream
//! call attached to it (see [`crate::streaming`]).

use std::collections::VecDeque;
use std::sync::Arc;

use keel_core::Conversation;
use keel_protocol::{Event, RequestId};
use tokio::sync::{Mutex, oneshot};
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

/// A conversation driven by the streaming tools. Dropping it stops its event loop.
pub(crate) struct StreamedConversation {
    pub(crate) conversation: Arc<Conversation>,
    pub(crate) state: Arc<Mutex<StreamState>>,
    pub(crate) _event_loop: AbortOnDropHandle<()>,
}

/// Why a stream call ended.
#[derive(Debug)]
pub(crate) enum StreamEnd {
    Cancelled,
    Replaced,
    ConversationClosed,
}

pub(crate) struct Subscriber {
    pub(crate) request_id: RequestId,
    pub(crate) done: oneshot::Sender<StreamEnd>,
}

impl Subscriber {
    pub(crate) fn end(self, why: StreamEnd) {
        if self.done.send(why).is_err() {
            tracing::debug!(request_id = %self.request_id, "stream call already gone");
        }
    }
}

pub(crate) struct StreamState {
    pub(crate) subscriber: Option<Subscriber>,
    pub(crate) buffer: VecDeque<Event>,
    pub(crate) dropped: usize,
    pub(crate) held_approvals: Vec<Event>,
    /// Elicitations in flight for this conversation.
    pub(crate) approvals: JoinSet<()>,
}
