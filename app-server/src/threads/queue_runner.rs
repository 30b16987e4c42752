//! Delivers a thread's queued messages (`thread/queue/*`, `keel queue`): whenever the loaded
//! thread is idle and its queue is not empty, the first message becomes its next turn, as if a
//! client had sent `turn/start`; a client's own `turn/start` in between keeps its turn, and the
//! queue waits for it to end.

use std::sync::Arc;

use keel_core::ThreadQueue;
use keel_protocol::app_server::{ServerNotification, ThreadQueueChangedNotification, UserInput};
use keel_protocol::{InputItem, Op, Submission, SubmissionId};

use super::LoadedThread;
use crate::error::{AppServerError, Result};

/// Runs until the thread closes; started for each loaded, recorded thread of a server that
/// delivers queued messages.
pub(crate) async fn deliver_queued(thread: Arc<LoadedThread>, queue: Arc<ThreadQueue>) {
    loop {
        thread.idle().await;
        if thread.finished.is_cancelled() {
            return;
        }
        // Registered before the queue is read, so a message added in between wakes us.
        let woken = thread.queue_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        // Looked at before claiming: a client's `turn/start` right after a resume must not
        // find the thread claimed by an empty queue.
        let store = queue.clone();
        let id = thread.id;
        let waiting = tokio::task::spawn_blocking(move || store.len(id)).await;
        if !matches!(waiting, Ok(Ok(count)) if count > 0) {
            if let Ok(Err(err)) = waiting {
                tracing::warn!(thread = %id, "reading the thread's queue: {err}");
            }
            tokio::select! {
                () = &mut woken => continue,
                () = thread.finished.cancelled() => return,
            }
        }
        let turn_id = uuid::Uuid::now_v7().to_string();
        if thread.claim_turn(&turn_id).is_err() {
            // A client's turn got there first: wait for it to end.
            continue;
        }
        let store = queue.clone();
        let taken = tokio::task::spawn_blocking(move || store.take(id, None)).await;
        match taken {
            Ok(Ok(Some(message))) => {
                thread.notify_queue_changed().await;
                if let Err(err) = submit_claimed_turn(&thread, &turn_id, message.input).await {
                    tracing::warn!(thread = %id, "a queued message could not start: {err}");
                }
            }
            Ok(Ok(None)) => {
                thread.release_claim(&turn_id);
                tokio::select! {
                    () = &mut woken => {}
                    () = thread.finished.cancelled() => return,
                }
            }
            Ok(Err(err)) => {
                thread.release_claim(&turn_id);
                tracing::warn!(thread = %id, "reading the thread's queue: {err}");
                tokio::select! {
                    () = &mut woken => {}
                    () = thread.finished.cancelled() => return,
                }
            }
            Err(err) => {
                thread.release_claim(&turn_id);
                tracing::warn!(thread = %id, "reading the thread's queue stopped: {err}");
                return;
            }
        }
    }
}

/// Hands `input` to the engine as turn `turn_id`, which the caller has claimed on `thread`;
/// the claim is given up when the engine cannot take it.
pub(crate) async fn submit_claimed_turn(
    thread: &LoadedThread,
    turn_id: &str,
    input: Vec<UserInput>,
) -> Result<()> {
    let items: Vec<InputItem> = input.into_iter().map(Into::into).collect();
    let submitted = thread
        .conversation
        .submit_with_id(Submission {
            id: SubmissionId::new(turn_id.to_string()),
            op: Op::UserInput { items },
        })
        .await;
    if let Err(err) = submitted {
        thread.release_claim(turn_id);
        return Err(AppServerError::Core(err));
    }
    Ok(())
}

impl LoadedThread {
    /// Tells the thread's followers its queue changed, and its queue runner to look again.
    pub(crate) async fn notify_queue_changed(&self) {
        self.queue_wake.notify_one();
        self.broadcast(ServerNotification::ThreadQueueChanged(
            ThreadQueueChangedNotification {
                thread_id: self.id.to_string(),
            },
        ))
        .await;
    }
}
