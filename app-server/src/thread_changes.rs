//! Changes other servers make to threads this server has loaded (in a store several servers
//! share): the thread's clients here are told, and a copy another server has taken over is
//! unloaded, so its clients resume it (wherever the balancer sends them) instead of running
//! a turn this server could no longer record.

use std::sync::Arc;

use keel_core::{ThreadChange, ThreadChangeKind};
use keel_protocol::app_server::{
    ServerNotification, ThreadIdNotification, ThreadNameUpdatedNotification, ThreadStatus,
    ThreadStatusChangedNotification,
};
use tokio::sync::broadcast::error::RecvError;

use crate::state::AppState;

impl AppState {
    /// Follows other servers' changes to the threads for as long as the server lives.
    pub(crate) fn follow_thread_changes(self: &Arc<Self>) {
        let Some(mut changes) = self.catalog.changes() else {
            return;
        };
        let state = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let change = match changes.recv().await {
                    Ok(change) => change,
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!("missed {missed} thread changes from other servers");
                        continue;
                    }
                    Err(RecvError::Closed) => break,
                };
                let Some(state) = state.upgrade() else {
                    break;
                };
                state.apply_change(change).await;
            }
        });
    }

    async fn apply_change(&self, change: ThreadChange) {
        let Some(thread) = self.loaded(change.id).await else {
            return;
        };
        let thread_id = change.id.to_string();
        match change.kind {
            ThreadChangeKind::Renamed => {
                let name = match self.catalog.find(change.id, false).await {
                    Ok(Some(summary)) => summary.name,
                    Ok(None) => return,
                    Err(err) => {
                        tracing::warn!(thread = %change.id, "cannot read its new name: {err}");
                        return;
                    }
                };
                thread.update_meta(|meta| meta.name = name.clone());
                thread
                    .broadcast(ServerNotification::ThreadNameUpdated(
                        ThreadNameUpdatedNotification {
                            thread_id,
                            thread_name: name,
                        },
                    ))
                    .await;
            }
            ThreadChangeKind::Unarchived => {}
            ThreadChangeKind::Archived | ThreadChangeKind::Deleted | ThreadChangeKind::Opened => {
                tracing::info!(
                    thread = %change.id,
                    server = %change.by,
                    "unloading a thread another server {}",
                    match change.kind {
                        ThreadChangeKind::Opened => "took over",
                        ThreadChangeKind::Archived => "archived",
                        ThreadChangeKind::Deleted
                        | ThreadChangeKind::Renamed
                        | ThreadChangeKind::Unarchived => "deleted",
                    }
                );
                if change.kind == ThreadChangeKind::Archived {
                    thread
                        .broadcast(ServerNotification::ThreadArchived(ThreadIdNotification {
                            thread_id: thread_id.clone(),
                        }))
                        .await;
                }
                thread
                    .broadcast(ServerNotification::ThreadStatusChanged(
                        ThreadStatusChangedNotification {
                            thread_id: thread_id.clone(),
                            status: ThreadStatus::NotLoaded,
                        },
                    ))
                    .await;
                thread
                    .broadcast(ServerNotification::ThreadClosed(ThreadIdNotification {
                        thread_id,
                    }))
                    .await;
                self.unload(change.id).await;
            }
        }
    }
}
