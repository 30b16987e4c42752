//! Rollout files: every conversation is recorded as JSONL under
//! `$KEEL_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl`, one line per item, flushed
//! as it goes, so a crash loses at most the line in flight. Resume and fork read them back.
//! An embedding program may record them elsewhere through a [`RolloutStore`].

mod archive;
mod catalog;
mod fold;
mod index;
mod items;
mod list;
#[cfg(feature = "postgres")]
mod postgres;
mod reader;
mod reader_thread;
mod recorder;
mod rollback;
mod search;
mod store;
mod summary;
mod thread_change;
mod thread_filter;
mod transcript_events;
mod turn_edge;

pub use archive::{archive_rollout, delete_rollout, unarchive_rollout};
pub use catalog::{
    FileThreadCatalog, NoteSwap, ThreadCatalog, ThreadCatalogError, ThreadNotes, ThreadSearch,
};
#[cfg(feature = "thread-index")]
pub use index::{ThreadIndex, ThreadIndexError};
pub use list::{find_rollout_path, list_conversations, list_conversations_in};
#[cfg(feature = "postgres")]
pub use postgres::{DEFAULT_THREAD_LEASE, PostgresThreadStore, ThreadLease};
pub use search::first_message_match;
pub use summary::{ConversationSummary, ConversationsPage, SearchHit, SearchPage, summarise};
pub use thread_change::{ThreadChange, ThreadChangeKind};
pub use thread_filter::{InvalidCursor, ListCursor, ListSort, ThreadFilter};

/// Where live rollout files are kept, under the Keel home.
pub const SESSIONS_DIR: &str = "sessions";
/// Where archived rollout files are kept, under the Keel home.
pub const ARCHIVED_SESSIONS_DIR: &str = "archived_sessions";
pub(crate) use items::RolloutLine;
pub use items::{CompactedItem, LoadedRollout, RolloutItem, SessionMeta, TranscriptEntry};
pub use recorder::RolloutRecorder;
pub(crate) use recorder::recorder_meta;
pub(crate) use rollback::drop_last_turns;
pub use store::{FileRolloutStore, InMemoryRolloutStore, RolloutSink, RolloutStore};
pub(crate) use store::{fold_items, stored_source};
pub(crate) use turn_edge::turn_edge;

use std::path::Path;

use keel_protocol::EventMsg;

use crate::error::{CoreError, Result};
use reader::{LineKind, RolloutLines, line_kind};
use transcript_events::{HUGE_LINE_BYTES, for_transcript, huge_exec_command_end};

/// Reads a rollout file. Lines that cannot be parsed (e.g. a torn last line after a crash)
/// are skipped with a warning; a file without session meta is an error.
///
/// Memory is bounded by what is kept, not by the file: the history starts at the last
/// compaction (earlier history lines are not even parsed), and the transcript's command
/// outputs are cut to [`TRANSCRIPT_OUTPUT_TOKENS`](transcript_events::TRANSCRIPT_OUTPUT_TOKENS).
pub async fn load_rollout(path: &Path) -> Result<LoadedRollout> {
    load_rollout_streaming(path, |_| true, (), |(), _| {})
        .await
        .map(|(loaded, ())| loaded)
}

/// [`load_rollout`] keeping only the events `keep` accepts, and handing every transcript entry
/// to `step` as it is read: the history without the weight of a long transcript, which the
/// caller folds into what it needs in the same pass.
pub(crate) async fn load_rollout_streaming<S: Send + 'static>(
    path: &Path,
    keep: fn(&EventMsg) -> bool,
    state: S,
    mut step: impl FnMut(&mut S, TranscriptEntry) + Send + 'static,
) -> Result<(LoadedRollout, S)> {
    let owned = path.to_path_buf();
    reader_thread::on_reader_thread(move || {
        let mut state = state;
        load_rollout_blocking(&owned, keep, &mut |entry| step(&mut state, entry))
            .map(|loaded| (loaded, state))
    })
    .await
    .ok_or_else(|| CoreError::Rollout {
        path: path.to_path_buf(),
        message: "reading stopped before the end".to_string(),
    })?
}

fn load_rollout_blocking(
    path: &Path,
    keep: fn(&EventMsg) -> bool,
    step: &mut dyn FnMut(TranscriptEntry),
) -> Result<LoadedRollout> {
    let io_error = |err: std::io::Error| CoreError::Rollout {
        path: path.to_path_buf(),
        message: err.to_string(),
    };
    // First pass: where the live history starts (the last readable compaction).
    let mut lines = RolloutLines::open(path).map_err(io_error)?;
    let mut last_compaction = 0;
    let compactions = |_: usize, kind: LineKind, _: &[u8]| kind == LineKind::Compacted;
    while let Some((number, line)) = lines.next_line_where(compactions).map_err(io_error)? {
        if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
            last_compaction = number;
        }
    }
    let mut lines = RolloutLines::open(path).map_err(io_error)?;
    let mut fold = fold::RolloutFold::default();
    // History before the last compaction is replaced by it: those lines are not even read.
    let needed = |number: usize, kind: LineKind, _: &[u8]| {
        number >= last_compaction || !matches!(kind, LineKind::ResponseItem | LineKind::Compacted)
    };
    while let Some((number, line)) = lines.next_line_where(needed).map_err(io_error)? {
        if line_kind(line) == LineKind::EventMsg
            && line.len() > HUGE_LINE_BYTES
            && let Some(end) = huge_exec_command_end(line)
        {
            fold.push_event(EventMsg::ExecCommandEnd(end), keep, step);
            continue;
        }
        match serde_json::from_slice::<RolloutLine>(line) {
            Ok(RolloutLine { item, .. }) => fold.push(item, keep, step),
            Err(err) => {
                tracing::warn!(
                    "{}:{}: skipping unreadable rollout line: {err}",
                    path.display(),
                    number
                );
            }
        }
    }
    fold.finish(path.to_path_buf())
}

/// Streams the transcript of a rollout file to `step`, on the rollout reader thread, without
/// collecting it: for building a view of a long thread (its turns) while holding only that
/// view. Returns the final state.
pub async fn read_transcript<S: Send + 'static>(
    path: &Path,
    state: S,
    mut step: impl FnMut(&mut S, TranscriptEntry) + Send + 'static,
) -> Result<S> {
    let owned = path.to_path_buf();
    reader_thread::on_reader_thread(move || {
        let mut state = state;
        read_transcript_blocking(&owned, &mut |entry| step(&mut state, entry)).map(|()| state)
    })
    .await
    .ok_or_else(|| CoreError::Rollout {
        path: path.to_path_buf(),
        message: "reading stopped before the end".to_string(),
    })?
}

fn read_transcript_blocking(path: &Path, step: &mut dyn FnMut(TranscriptEntry)) -> Result<()> {
    let mut lines = RolloutLines::open(path).map_err(|err| CoreError::Rollout {
        path: path.to_path_buf(),
        message: err.to_string(),
    })?;
    let wanted = |_: usize, kind: LineKind, _: &[u8]| {
        matches!(kind, LineKind::EventMsg | LineKind::Rollback)
    };
    loop {
        let line = match lines.next_line_where(wanted) {
            Ok(Some((_, line))) => line,
            Ok(None) => return Ok(()),
            Err(err) => {
                return Err(CoreError::Rollout {
                    path: path.to_path_buf(),
                    message: err.to_string(),
                });
            }
        };
        if line.len() > HUGE_LINE_BYTES
            && let Some(end) = huge_exec_command_end(line)
        {
            step(TranscriptEntry::Event(EventMsg::ExecCommandEnd(end)));
            continue;
        }
        match serde_json::from_slice::<RolloutLine>(line) {
            Ok(RolloutLine {
                item: RolloutItem::EventMsg(event),
                ..
            }) => step(TranscriptEntry::Event(for_transcript(event))),
            Ok(RolloutLine {
                item: RolloutItem::Rollback(n),
                ..
            }) => step(TranscriptEntry::Rollback(n)),
            Ok(_) => {}
            Err(err) => tracing::warn!(
                "{}: skipping unreadable rollout line: {err}",
                path.display()
            ),
        }
    }
}

/// Whether an event is kept in the rollout (the ones needed to redraw a transcript).
pub(crate) fn is_persisted_event(msg: &EventMsg) -> bool {
    matches!(
        msg,
        EventMsg::TaskStarted(_)
            | EventMsg::UserMessage(_)
            | EventMsg::AgentMessage(_)
            | EventMsg::AgentReasoning(_)
            | EventMsg::TokenCount(_)
            | EventMsg::TaskComplete(_)
            | EventMsg::TurnAborted(_)
            | EventMsg::Error(_)
            | EventMsg::ExecCommandEnd(_)
            | EventMsg::PatchApplyEnd(_)
            | EventMsg::PlanUpdate(_)
            | EventMsg::ThreadRolledBack(_)
            | EventMsg::ContextCompacted(_)
            | EventMsg::McpToolCallEnd(_)
            | EventMsg::DynamicToolCallEnd(_)
            | EventMsg::ToolCallEnd(_)
            | EventMsg::EnteredReviewMode(_)
            | EventMsg::ThreadGoalUpdated(_)
            | EventMsg::ThreadGoalCleared
            | EventMsg::ExitedReviewMode(_)
    )
}
