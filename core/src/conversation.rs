//! The handle an embedder holds for one conversation: submit operations, read events.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use futures::Stream;
use keel_protocol::{ConversationId, Event, Op, Submission, SubmissionId};
use tokio::sync::{Mutex, mpsc};

use crate::error::{CoreError, Result};

/// A running conversation. Dropping the last handle shuts it down and kills its commands.
pub struct Conversation {
    id: ConversationId,
    tx_sub: mpsc::Sender<Submission>,
    rx_event: Mutex<mpsc::Receiver<Event>>,
    next_id: AtomicU64,
    rollout_path: Option<PathBuf>,
}

impl Conversation {
    pub(crate) fn new(
        id: ConversationId,
        tx_sub: mpsc::Sender<Submission>,
        rx_event: mpsc::Receiver<Event>,
        rollout_path: Option<PathBuf>,
    ) -> Self {
        Self {
            id,
            tx_sub,
            rx_event: Mutex::new(rx_event),
            next_id: AtomicU64::new(1),
            rollout_path,
        }
    }

    /// The conversation's id.
    pub fn id(&self) -> ConversationId {
        self.id
    }

    /// The rollout file recording this conversation.
    pub fn rollout_path(&self) -> Option<&Path> {
        self.rollout_path.as_deref()
    }

    /// Queues an operation and returns the id its events will carry. User input while a turn
    /// runs joins that turn.
    pub async fn submit(&self, op: Op) -> Result<SubmissionId> {
        let id = SubmissionId::new(self.next_id.fetch_add(1, Ordering::Relaxed).to_string());
        self.submit_with_id(Submission { id: id.clone(), op })
            .await?;
        Ok(id)
    }

    /// Queues a submission whose id the caller chose.
    pub async fn submit_with_id(&self, submission: Submission) -> Result<()> {
        self.tx_sub
            .send(submission)
            .await
            .map_err(|_| CoreError::ConversationClosed(self.id))
    }

    /// The next event. Cancel-safe; events are never lost when the future is dropped.
    /// Errors once the conversation has shut down and every event was read.
    pub async fn next_event(&self) -> Result<Event> {
        self.rx_event
            .lock()
            .await
            .recv()
            .await
            .ok_or(CoreError::ConversationClosed(self.id))
    }

    /// The events as a stream that ends when the conversation shuts down.
    pub fn events(&self) -> impl Stream<Item = Event> + '_ {
        futures::stream::unfold(self, |conversation| async move {
            conversation
                .next_event()
                .await
                .ok()
                .map(|event| (event, conversation))
        })
    }
}
