//! `fuzzyFileSearch` and its sessions (the `@` file picker of Codex clients): one
//! connection's searches, each root walked honouring ignore files, matched in memory.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use keel_core::file_search::{FileIndex, FileMatch, search_indexes};
use keel_protocol::app_server::{
    EmptyResponse, FuzzyFileSearchMatchType, FuzzyFileSearchParams, FuzzyFileSearchResponse,
    FuzzyFileSearchResult, FuzzyFileSearchSessionCompletedNotification,
    FuzzyFileSearchSessionStartParams, FuzzyFileSearchSessionStopParams,
    FuzzyFileSearchSessionUpdateParams, FuzzyFileSearchSessionUpdatedNotification,
    ServerNotification,
};
use tokio::sync::OnceCell;

use crate::error::{AppServerError, Result};
use crate::handlers::Reply;
use crate::outgoing::Outgoing;

/// The most matches one search returns.
const MATCH_LIMIT: usize = 50;

/// A connection's file searches: cancellation tokens of one-shot searches and open sessions.
#[derive(Default)]
pub(crate) struct FileSearches {
    tokens: Mutex<HashMap<String, Arc<AtomicBool>>>,
    sessions: Mutex<HashMap<String, Arc<SearchSession>>>,
}

/// A session's roots, walked once on first need and searched for every update.
struct SearchSession {
    roots: Vec<PathBuf>,
    indexes: OnceCell<Arc<Vec<FileIndex>>>,
    stopped: Arc<AtomicBool>,
    /// The latest update; an older one still matching gives up without answering.
    latest: AtomicU64,
    /// Held from the check that an update is still the latest until its notifications are
    /// sent, so an older update's results never follow a newer one's.
    answering: tokio::sync::Mutex<()>,
}

impl FileSearches {
    /// `fuzzyFileSearch`: walks the roots and answers the best matches.
    pub(crate) async fn search(
        &self,
        params: FuzzyFileSearchParams,
    ) -> Result<FuzzyFileSearchResponse> {
        let roots = checked_roots("fuzzyFileSearch", &params.roots)?;
        let cancelled = Arc::new(AtomicBool::new(false));
        if let Some(token) = &params.cancellation_token {
            // A newer search under the same token supersedes the one running.
            if let Some(earlier) = lock(&self.tokens).insert(token.clone(), cancelled.clone()) {
                earlier.store(true, Ordering::Relaxed);
            }
        }
        let flag = cancelled.clone();
        let query = params.query;
        let found = tokio::task::spawn_blocking(move || {
            if query.trim().is_empty() {
                return Vec::new();
            }
            let indexes: Vec<FileIndex> = roots
                .iter()
                .map(|root| FileIndex::build(root, &flag))
                .collect();
            search_indexes(&indexes, &query, MATCH_LIMIT, &flag)
        })
        .await
        .map_err(|err| AppServerError::Internal(format!("file search: {err}")))?;
        if let Some(token) = &params.cancellation_token {
            let mut tokens = lock(&self.tokens);
            if tokens
                .get(token)
                .is_some_and(|t| Arc::ptr_eq(t, &cancelled))
            {
                tokens.remove(token);
            }
        }
        let files = if cancelled.load(Ordering::Relaxed) {
            Vec::new()
        } else {
            found.iter().map(to_result).collect()
        };
        Ok(FuzzyFileSearchResponse { files })
    }

    /// `fuzzyFileSearch/sessionStart`: starts walking the roots at once, so the first
    /// update finds the listing ready; a session of the same id is replaced.
    pub(crate) fn start_session(
        &self,
        params: FuzzyFileSearchSessionStartParams,
    ) -> Result<EmptyResponse> {
        let roots = checked_roots("fuzzyFileSearch/sessionStart", &params.roots)?;
        let session = Arc::new(SearchSession {
            roots,
            indexes: OnceCell::new(),
            stopped: Arc::new(AtomicBool::new(false)),
            latest: AtomicU64::new(0),
            answering: tokio::sync::Mutex::new(()),
        });
        if let Some(old) = lock(&self.sessions).insert(params.session_id, session.clone()) {
            old.stopped.store(true, Ordering::Relaxed);
        }
        tokio::spawn(async move {
            session.listing().await;
        });
        Ok(EmptyResponse {})
    }

    /// `fuzzyFileSearch/sessionUpdate`: answers at once; `sessionUpdated` with the matches
    /// and `sessionCompleted` follow, unless a newer update or a stop overtook it.
    pub(crate) fn update_session(
        &self,
        params: FuzzyFileSearchSessionUpdateParams,
        outgoing: &Arc<Outgoing>,
    ) -> Result<Reply> {
        let Some(session) = lock(&self.sessions).get(&params.session_id).cloned() else {
            return Err(AppServerError::InvalidRequest(format!(
                "fuzzy file search session not found: {}",
                params.session_id
            )));
        };
        let generation = session.latest.fetch_add(1, Ordering::SeqCst) + 1;
        let outgoing = outgoing.clone();
        Reply::then(&EmptyResponse {}, async move {
            let indexes = session.listing().await;
            let query = params.query.clone();
            let cancelled = session.stopped.clone();
            let found = tokio::task::spawn_blocking(move || {
                search_indexes(&indexes, &query, MATCH_LIMIT, &cancelled)
            })
            .await
            .unwrap_or_default();
            let _answering = session.answering.lock().await;
            let overtaken = session.latest.load(Ordering::SeqCst) != generation;
            if overtaken || session.stopped.load(Ordering::Relaxed) {
                return;
            }
            outgoing
                .notify(ServerNotification::FuzzyFileSearchSessionUpdated(
                    FuzzyFileSearchSessionUpdatedNotification {
                        session_id: params.session_id.clone(),
                        query: params.query,
                        files: found.iter().map(to_result).collect(),
                    },
                ))
                .await;
            outgoing
                .notify(ServerNotification::FuzzyFileSearchSessionCompleted(
                    FuzzyFileSearchSessionCompletedNotification {
                        session_id: params.session_id,
                    },
                ))
                .await;
        })
    }

    /// `fuzzyFileSearch/sessionStop`: forgets the session (stopping one already gone is fine).
    pub(crate) fn stop_session(&self, params: FuzzyFileSearchSessionStopParams) -> EmptyResponse {
        if let Some(session) = lock(&self.sessions).remove(&params.session_id) {
            session.stopped.store(true, Ordering::Relaxed);
        }
        EmptyResponse {}
    }
}

impl Drop for FileSearches {
    /// The connection closed: its walks and searches stop.
    fn drop(&mut self) {
        for session in lock(&self.sessions).values() {
            session.stopped.store(true, Ordering::Relaxed);
        }
        for token in lock(&self.tokens).values() {
            token.store(true, Ordering::Relaxed);
        }
    }
}

impl SearchSession {
    /// The roots' listings, walked once (on a blocking thread).
    async fn listing(&self) -> Arc<Vec<FileIndex>> {
        self.indexes
            .get_or_init(|| async {
                let roots = self.roots.clone();
                let stopped = self.stopped.clone();
                let walked = tokio::task::spawn_blocking(move || {
                    roots
                        .iter()
                        .map(|root| FileIndex::build(root, &stopped))
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap_or_default();
                Arc::new(walked)
            })
            .await
            .clone()
    }
}

/// Every root must be an absolute path to a directory; the error names the first that is not.
fn checked_roots(method: &str, roots: &[String]) -> Result<Vec<PathBuf>> {
    roots
        .iter()
        .enumerate()
        .map(|(at, root)| {
            let path = PathBuf::from(root);
            let problem = if !path.is_absolute() {
                Some("is not an absolute path")
            } else if !path.is_dir() {
                Some("is not a directory")
            } else {
                None
            };
            match problem {
                Some(problem) => Err(AppServerError::InvalidParams {
                    method: method.to_string(),
                    message: format!("roots[{at}] `{root}` {problem}"),
                }),
                None => Ok(path),
            }
        })
        .collect()
}

fn to_result(found: &FileMatch) -> FuzzyFileSearchResult {
    FuzzyFileSearchResult {
        root: found.root.display().to_string(),
        path: found.path.clone(),
        match_type: if found.is_dir {
            FuzzyFileSearchMatchType::Directory
        } else {
            FuzzyFileSearchMatchType::File
        },
        file_name: found.file_name().to_string(),
        score: found.score,
        indices: Some(found.indices.clone()),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(FuzzyFileSearch, |ctx, p| Reply::now(
    &ctx.connection.file_searches.search(p).await?
));
handle!(FuzzyFileSearchSessionStart, |ctx, p| Reply::now(
    &ctx.connection.file_searches.start_session(p)?
));
handle!(FuzzyFileSearchSessionUpdate, |ctx, p| ctx
    .connection
    .file_searches
    .update_session(p, ctx.outgoing()));
handle!(FuzzyFileSearchSessionStop, |ctx, p| Reply::now(
    &ctx.connection.file_searches.stop_session(p)
));
