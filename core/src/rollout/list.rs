//! Paging through recorded conversations, newest first.

use std::path::{Path, PathBuf};

use keel_protocol::ConversationId;

use super::summary::{ConversationSummary, ConversationsPage, summarise};
use crate::error::{CoreError, Result};

/// Lists conversations under `keel_home/sessions`, newest first. The cursor is the file name
/// of the last item of the previous page.
pub async fn list_conversations(
    keel_home: &Path,
    page_size: usize,
    cursor: Option<&str>,
) -> Result<ConversationsPage> {
    list_conversations_in(&keel_home.join(super::SESSIONS_DIR), page_size, cursor).await
}

/// [`list_conversations`] over any directory of rollout files (e.g. the archive).
pub async fn list_conversations_in(
    root: &Path,
    page_size: usize,
    cursor: Option<&str>,
) -> Result<ConversationsPage> {
    let home = root.to_path_buf();
    let files = tokio::task::spawn_blocking(move || rollout_files_newest_first(&home))
        .await
        .map_err(|err| CoreError::io("list sessions", std::io::Error::other(err)))??;
    let mut items = Vec::new();
    let mut next_cursor = None;
    let mut started = cursor.is_none();
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !started {
            started = cursor.is_some_and(|c| c == name);
            continue;
        }
        if items.len() == page_size {
            next_cursor = items
                .last()
                .and_then(|s: &ConversationSummary| s.path.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            break;
        }
        if let Some(summary) = summarise(&path).await {
            items.push(summary);
        }
    }
    Ok(ConversationsPage { items, next_cursor })
}

fn rollout_files_newest_first(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if !root.exists() {
        return Ok(files);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|err| CoreError::io(format!("read {}", dir.display()), err))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    // File names start with the creation timestamp, then the time-ordered id.
    files.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    Ok(files)
}

/// The index's answer, when `keel_home` has an index (one is not built just for this: a
/// one-off lookup walks faster than a first build) and it can answer.
#[cfg(feature = "thread-index")]
async fn find_indexed(keel_home: &Path, id: ConversationId) -> Option<Option<PathBuf>> {
    if !super::index::index_exists(keel_home) {
        return None;
    }
    let home = keel_home.to_path_buf();
    let found = tokio::task::spawn_blocking(move || {
        super::ThreadIndex::open(&home).and_then(|index| index.find(id, false))
    })
    .await
    .ok()?;
    match found {
        Ok(found) => Some(found),
        Err(err) => {
            tracing::debug!("thread index lookup failed, walking the rollouts: {err}");
            None
        }
    }
}

/// The rollout file of the conversation with this id, if one is recorded under `keel_home`:
/// through the thread index when one exists there (a lookup instead of a walk over every
/// rollout), else by walking the files.
pub async fn find_rollout_path(keel_home: &Path, id: ConversationId) -> Result<Option<PathBuf>> {
    #[cfg(feature = "thread-index")]
    if let Some(found) = find_indexed(keel_home, id).await {
        return Ok(found);
    }
    let root = keel_home.join(super::SESSIONS_DIR);
    let files = tokio::task::spawn_blocking(move || rollout_files_newest_first(&root))
        .await
        .map_err(|err| CoreError::io("list sessions", std::io::Error::other(err)))??;
    let suffix = format!("-{id}.jsonl");
    Ok(files.into_iter().find(|path| {
        path.file_name()
            .is_some_and(|name| name.to_string_lossy().ends_with(&suffix))
    }))
}
