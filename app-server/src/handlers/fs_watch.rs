//! `fs/watch` and `fs/unwatch` (Codex 0.171): a connection watches files or directories and
//! is told of changes as `fs/changed {watchId, changedPaths}`. Watches belong to their
//! connection (a watch id is the client's, unique on it) and end with it; a connection holds
//! at most [`MAX_WATCHES`]. Changes arriving together are sent as one notification.
//!
//! A directory is watched with its direct entries (not recursively): a client that cares
//! about a subtree watches what it shows, which keeps a watch on a large tree from costing
//! one kernel watch per directory. A path that does not exist yet is watched through its
//! parent: its creation is reported, and a directory created there is then watched itself
//! (as Codex does).

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
    _watcher: Arc<Mutex<notify::RecommendedWatcher>>,
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
        // A path that exists is reported canonical; one that does not yet, as given, and is
        // watched through its parent until it appears.
        let (path, waiting) = match std::fs::canonicalize(&params.path) {
            Ok(path) => (path, false),
            Err(_) => (params.path.clone(), true),
        };
        {
            let watches = self.lock();
            if watches.contains_key(&params.watch_id) {
                return Err(AppServerError::InvalidRequest(format!(
                    "watchId already exists: {}",
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
        let watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
                Ok(event) if !event.paths.is_empty() => {
                    let _ = changes.send(event.paths);
                }
                Ok(_) => {}
                Err(err) => tracing::debug!(%err, "file watch error"),
            })
            .map_err(|err| AppServerError::InvalidRequest(format!("fs/watch: {err}")))?;
        let watcher = Arc::new(Mutex::new(watcher));
        let watched = if waiting {
            path.parent()
                .map(PathBuf::from)
                .unwrap_or_else(|| path.clone())
        } else {
            path.clone()
        };
        watcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .watch(&watched, RecursiveMode::NonRecursive)
            .map_err(|err| {
                AppServerError::InvalidRequest(format!(
                    "fs/watch: cannot watch {}: {err}",
                    params.path.display()
                ))
            })?;
        let rearm = Arc::clone(&watcher);
        let target = path.clone();
        let outgoing = Arc::clone(outgoing);
        let watch_id = params.watch_id.clone();
        let forward = tokio::spawn(async move {
            let mut waiting = waiting;
            let relevant = move |paths: Vec<PathBuf>, waiting: bool| -> Vec<PathBuf> {
                if waiting {
                    paths
                        .into_iter()
                        .filter(|changed| changed.starts_with(&target))
                        .collect()
                } else {
                    paths
                }
            };
            while let Some(first) = received.recv().await {
                let mut paths: BTreeSet<PathBuf> = relevant(first, waiting).into_iter().collect();
                let gathering = tokio::time::sleep(GATHER);
                tokio::pin!(gathering);
                loop {
                    tokio::select! {
                        () = &mut gathering => break,
                        more = received.recv() => match more {
                            Some(more) => paths.extend(relevant(more, waiting)),
                            None => break,
                        },
                    }
                }
                if paths.is_empty() {
                    continue;
                }
                // The awaited directory appeared: watch it from now on.
                if waiting && watched_target_is_dir(&paths) {
                    let mut watcher = rearm.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(dir) = paths.iter().find(|path| path.is_dir())
                        && watcher.watch(dir, RecursiveMode::NonRecursive).is_ok()
                    {
                        waiting = false;
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

    /// `fs/unwatch`; an unknown id is no error (Codex answers `{}` too).
    pub(crate) fn unwatch(&self, params: FsUnwatchParams) -> EmptyResponse {
        if self.lock().remove(&params.watch_id).is_none() {
            tracing::debug!(watch = %params.watch_id, "fs/unwatch of an unknown watch");
        }
        EmptyResponse {}
    }
}

/// Whether the changes include a directory (the awaited path, created as one).
fn watched_target_is_dir(paths: &BTreeSet<PathBuf>) -> bool {
    paths.iter().any(|path| path.is_dir())
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(FsWatch, |ctx, p| Reply::now(
    &ctx.connection.fs_watches.watch(p, ctx.outgoing())?
));
handle!(FsUnwatch, |ctx, p| Reply::now(
    &ctx.connection.fs_watches.unwatch(p)
));
