//! Rollout files: every conversation is recorded as JSONL under
//! `$KEEL_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl`, one line per item, flushed
//! as it goes, so a crash loses at most the line in flight. Resume and fork read them back.
//! An embedding program may record them elsewhere through a [`RolloutStore`].

mod archive;
mod fold;
mod index;
mod list;
mod reader;
mod reader_thread;
mod recorder;
mod search;
mod store;

pub use archive::{archive_rollout, delete_rollout, unarchive_rollout};
#[cfg(feature = "thread-index")]
pub use index::{IndexQuery, SearchHit, SearchPage, ThreadIndex, ThreadIndexError};
pub use list::{
    ConversationSummary, ConversationsPage, find_rollout_path, list_conversations,
    list_conversations_in, summarise,
};
pub use search::first_message_match;

/// Where live rollout files are kept, under the Keel home.
pub const SESSIONS_DIR: &str = "sessions";
/// Where archived rollout files are kept, under the Keel home.
pub const ARCHIVED_SESSIONS_DIR: &str = "archived_sessions";
pub use recorder::RolloutRecorder;
pub(crate) use recorder::recorder_meta;
pub use store::{FileRolloutStore, InMemoryRolloutStore, RolloutSink, RolloutStore};
pub(crate) use store::{fold_items, stored_source};

use std::path::{Path, PathBuf};

use keel_protocol::{ConversationId, EventMsg};
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::models::ResponseItem;
use reader::{LineKind, RolloutLines, line_kind};

/// The first line of every rollout file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The conversation's id.
    pub id: ConversationId,
    /// When it was created (RFC 3339).
    pub timestamp: String,
    /// Its working directory.
    pub cwd: PathBuf,
    /// The model it started with.
    #[serde(default)]
    pub model: Option<String>,
    /// The program that wrote the file.
    pub originator: String,
    /// That program's version.
    pub cli_version: String,
    /// The conversation this one was forked from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ConversationId>,
    /// The client's own tools it was started with (`dynamicTools`), offered again on resume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_tools: Vec<keel_protocol::DynamicToolSpec>,
}

/// One line of a rollout file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload", rename_all = "snake_case")]
pub enum RolloutItem {
    /// Identifies the conversation.
    SessionMeta(SessionMeta),
    /// An item of the model-facing history.
    ResponseItem(ResponseItem),
    /// An event kept to rebuild the transcript for display.
    EventMsg(EventMsg),
    /// The user named the conversation (the latest name wins).
    ThreadName(String),
    /// The latest `num_turns` turns were dropped from history and transcript.
    Rollback(u32),
    /// The history was compacted: what the model sees from here on starts from this.
    Compacted(CompactedItem),
}

/// A compaction as recorded: the summary, and the history that replaced everything before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactedItem {
    /// The summary the model wrote.
    pub message: String,
    /// The new history (the user's recent messages and the summary); absent in files that
    /// only recorded the summary, where it is rebuilt from the summary alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement_history: Option<Vec<ResponseItem>>,
}

/// A rollout line with its timestamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RolloutLine {
    pub timestamp: String,
    #[serde(flatten)]
    pub item: RolloutItem,
}

/// A conversation read back from its rollout file.
#[derive(Debug, Clone)]
pub struct LoadedRollout {
    /// The file's session meta.
    pub meta: SessionMeta,
    /// Model-facing history, in order.
    pub history: Vec<ResponseItem>,
    /// Recorded events, in order, for display.
    pub events: Vec<EventMsg>,
    /// The latest name the user gave the conversation.
    pub name: Option<String>,
    /// The token usage last recorded, so a resumed conversation keeps counting from it.
    pub token_info: Option<keel_protocol::TokenUsageInfo>,
    /// The thread's goal as last recorded.
    pub goal: Option<keel_protocol::ThreadGoal>,
    /// Where it was read from.
    pub path: PathBuf,
}

/// Reads a rollout file. Lines that cannot be parsed (e.g. a torn last line after a crash)
/// are skipped with a warning; a file without session meta is an error.
///
/// Memory is bounded by what is kept, not by the file: the history starts at the last
/// compaction (earlier history lines are not even parsed), and the transcript's command
/// outputs are cut to [`TRANSCRIPT_OUTPUT_TOKENS`].
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

/// Tokens (about 4 bytes each) of each command output a loaded transcript keeps; the live
/// history is not cut.
const TRANSCRIPT_OUTPUT_TOKENS: usize = 256;

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

/// A step of a recorded transcript, as [`read_transcript`] hands them out.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "entries are handed out one at a time, never stored"
)]
pub enum TranscriptEntry {
    /// A recorded event (command outputs cut as in [`load_rollout`]).
    Event(EventMsg),
    /// The latest `n` turns were dropped.
    Rollback(u32),
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

/// Event lines longer than this are read without their bulk where possible.
const HUGE_LINE_BYTES: usize = 1024 * 1024;

/// An `exec_command_end` line read without its output fields (which serde skips without
/// copying them), the output replaced by a note; `None` for any other event.
fn huge_exec_command_end(line: &[u8]) -> Option<keel_protocol::ExecCommandEndEvent> {
    #[derive(Deserialize)]
    struct Line {
        payload: Header,
    }
    #[derive(Deserialize)]
    struct Header {
        #[serde(rename = "type")]
        kind: String,
        call_id: keel_protocol::CallId,
        turn_id: keel_protocol::TurnId,
        command: Vec<String>,
        cwd: PathBuf,
        #[serde(default)]
        parsed_cmd: Vec<keel_protocol::ParsedCommand>,
        #[serde(default)]
        source: keel_protocol::ExecCommandSource,
        #[serde(default)]
        process_id: Option<String>,
        exit_code: i32,
        duration: std::time::Duration,
        status: keel_protocol::ExecCommandStatus,
    }
    let header = serde_json::from_slice::<Line>(line).ok()?.payload;
    if header.kind != "exec_command_end" {
        return None;
    }
    Some(keel_protocol::ExecCommandEndEvent {
        call_id: header.call_id,
        turn_id: header.turn_id,
        command: header.command,
        cwd: header.cwd,
        parsed_cmd: header.parsed_cmd,
        source: header.source,
        process_id: header.process_id,
        stdout: String::new(),
        stderr: String::new(),
        aggregated_output: format!(
            "[output not kept in the transcript: its record is {} bytes]",
            line.len()
        ),
        exit_code: header.exit_code,
        duration: header.duration,
        formatted_output: String::new(),
        status: header.status,
    })
}

/// An event as the transcript keeps it: a command's output once (the aggregated stream, cut
/// to head and tail), not three times.
fn for_transcript(event: EventMsg) -> EventMsg {
    let cut = |text: String| {
        if text.len() > TRANSCRIPT_OUTPUT_TOKENS * 4 {
            crate::unified_exec::head_and_tail(&text, TRANSCRIPT_OUTPUT_TOKENS)
        } else {
            text
        }
    };
    match event {
        EventMsg::ExecCommandEnd(mut end) => {
            end.stdout = String::new();
            end.stderr = String::new();
            end.formatted_output = String::new();
            end.aggregated_output = cut(std::mem::take(&mut end.aggregated_output));
            EventMsg::ExecCommandEnd(end)
        }
        other => other,
    }
}

/// Drops everything from the `num_turns`-th latest user input on, in history and transcript.
pub(crate) fn drop_last_turns(
    history: &mut Vec<ResponseItem>,
    events: &mut Vec<EventMsg>,
    num_turns: u32,
) {
    let cut = |positions: Vec<usize>| -> Option<usize> {
        let n = num_turns as usize;
        (n > 0 && n <= positions.len()).then(|| positions[positions.len() - n])
    };
    let user_items: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, item)| matches!(item, ResponseItem::Message { role, .. } if role == "user"))
        .map(|(i, _)| i)
        .collect();
    match cut(user_items) {
        Some(at) => history.truncate(at),
        None if num_turns > 0 => history.clear(),
        None => {}
    }
    let user_events: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, EventMsg::UserMessage(_)))
        .map(|(i, _)| i)
        .collect();
    match cut(user_events) {
        Some(at) => events.truncate(at),
        None if num_turns > 0 => events.clear(),
        None => {}
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
