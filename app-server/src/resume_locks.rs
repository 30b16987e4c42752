//! One resume of a thread at a time on a server: a second client resuming the same thread
//! waits for the first and then joins the thread it loaded, instead of loading a second copy
//! (two writers of one record, or, on a shared store, a copy the other one fenced).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use keel_protocol::ConversationId;
use tokio::sync::OwnedMutexGuard;

/// The resumes under way, by thread.
#[derive(Default)]
pub(crate) struct ResumeLocks {
    held: Mutex<HashMap<ConversationId, Weak<tokio::sync::Mutex<()>>>>,
}

impl ResumeLocks {
    /// Waits until no other resume of `id` is under way here; the returned guard holds off
    /// the next one until it is dropped.
    pub(crate) async fn hold(&self, id: ConversationId) -> OwnedMutexGuard<()> {
        let lock = {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            held.retain(|_, lock| lock.strong_count() > 0);
            match held.get(&id).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    held.insert(id, Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }
}
