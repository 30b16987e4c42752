//! `fs/watch` and `fs/unwatch` (Codex 0.171): a connection watches files or directories and
//! is told of changes as `fs/changed {watchId, changedPaths}`. Watches belong to their
//! connection (a watch id is the client's, unique on it) and end with it; a connection holds
//! at most [`MAX_WATCHES`]. Changes arriving together are sent as one notification.
//!
//! A directory is watched with its direct entries (not recursively): a client that cares
//! about a subtree watches what it shows, which keeps a watch on a large tree from costing
//! one kernel watch per directory.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use keel_protocol::app_server::{
    EmptyResponse, FsChangedNotification, FsUnwatchParams, FsWatchParams, FsWatchResponse,
    ServerNotification,
};
use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::task::AbortOnDropHandle;

use super::paths::require_absolute;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;

/// Watches one connection may hold.
pub(crate) const MAX_WATCHES: usize = 256;

/// How long changes are gathered into one notification.
const GATHER: Duration = Duration::from_millis(50);

struct Watch {
    /// Dropping it stops the kernel watch.
    _watcher: notify::RecommendedWatcher,
    /// Forwards the changes; aborted with the watch.
    _forward: AbortOnDropHandle<()>,
}

/// A connection's watches, by the client's id; they stop when the connection ends.
#[derive(Default)]
pub(crate) struct FsWatches {
    watches: Mutex<HashMap<String, Watch>>,
}

impl FsWatches {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Watch>> {
        // Each critical section is one map operation; a poisoned map is still valid.
        self.watches.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `fs/watch`.
    pub(crate) fn watch(
        &self,
        params: FsWatchParams,
        outgoing: &Arc<Outgoing>,
    ) -> Result<FsWatchResponse> {
        require_absolute("fs/watch", "path", &params.path)?;
        let path = std::fs::canonicalize(&params.path).map_err(|err| {
            AppServerError::InvalidRequest(format!(
                "fs/watch: cannot watch {}: {err}",
                params.path.display()
            ))
        })?;
        {
            let watches = self.lock();
            if watches.contains_key(&params.watch_id) {
                return Err(AppServerError::InvalidRequest(format!(
                    "fs/watch: watch `{}` already exists on this connection; fs/unwatch it first",
                    params.watch_id
                )));
            }
            if watches.len() >= MAX_WATCHES {
                return Err(AppServerError::InvalidRequest(format!(
                    "fs/watch: this connection already holds {MAX_WATCHES} watches; fs/unwatch some first"
                )));
            }
        }
        let (changes, mut received) = mpsc::unbounded_channel::<Vec<PathBuf>>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) if !event.paths.is_empty() => {
                    let _ = changes.send(event.paths);
                }
                Ok(_) => {}
                Err(err) => tracing::debug!(%err, "file watch error"),
            })
            .map_err(|err| AppServerError::InvalidRequest(format!("fs/watch: {err}")))?;
        watcher
            .watch(&path, RecursiveMode::NonRecursive)
            .map_err(|err| {
                AppServerError::InvalidRequest(format!(
                    "fs/watch: cannot watch {}: {err}",
                    path.display()
                ))
            })?;
        let outgoing = Arc::clone(outgoing);
        let watch_id = params.watch_id.clone();
        let forward = tokio::spawn(async move {
            while let Some(first) = received.recv().await {
                let mut paths: BTreeSet<PathBuf> = first.into_iter().collect();
                let gathering = tokio::time::sleep(GATHER);
                tokio::pin!(gathering);
                loop {
                    tokio::select! {
                        () = &mut gathering => break,
                        more = received.recv() => match more {
                            Some(more) => paths.extend(more),
                            None => break,
                        },
                    }
                }
                outgoing
                    .notify(ServerNotification::FsChanged(FsChangedNotification {
                        watch_id: watch_id.clone(),
                        changed_paths: paths.into_iter().collect(),
                    }))
                    .await;
            }
        });
        self.lock().insert(
            params.watch_id,
            Watch {
                _watcher: watcher,
                _forward: AbortOnDropHandle::new(forward),
            },
        );
        Ok(FsWatchResponse { path })
    }

    /// `fs/unwatch`; an unknown id is an error naming it.
    pub(crate) fn unwatch(&self, params: FsUnwatchParams) -> Result<EmptyResponse> {
        match self.lock().remove(&params.watch_id) {
            Some(_) => Ok(EmptyResponse {}),
            None => Err(AppServerError::InvalidRequest(format!(
                "fs/unwatch: no watch `{}` on this connection",
                params.watch_id
            ))),
        }
    }
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(FsWatch, |ctx, p| Reply::now(
    &ctx.connection.fs_watches.watch(p, ctx.outgoing())?
));
handle!(FsUnwatch, |ctx, p| Reply::now(
    &ctx.connection.fs_watches.unwatch(p)?
));
