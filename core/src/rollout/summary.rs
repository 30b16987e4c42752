//! What a listing shows of one recorded conversation, read from the head of its file.

use std::path::{Path, PathBuf};

use keel_protocol::ConversationId;
use keel_protocol::app_server::SessionSource;

use super::reader::{LineKind, RolloutLines};
use super::{RolloutItem, RolloutLine};

/// One recorded conversation, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationSummary {
    /// The conversation's id.
    pub id: ConversationId,
    /// Its rollout file.
    pub path: PathBuf,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// Its working directory.
    pub cwd: PathBuf,
    /// The first user message, for display.
    pub preview: String,
    /// The latest name the user gave it.
    pub name: Option<String>,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// Whether a turn ever started in it (clients list only threads that had one).
    pub has_turns: bool,
    /// The model it was started with, when recorded.
    pub model: Option<String>,
    /// Who started it (a file from before sources were recorded: an interactive CLI).
    pub source: SessionSource,
    /// The model provider it was started with, when recorded.
    pub model_provider: Option<String>,
}

impl ConversationSummary {
    /// The thread whose agent spawned this one, if one did.
    pub fn parent_id(&self) -> Option<ConversationId> {
        self.source.parent_thread_id()?.parse().ok()
    }
}

/// Reads a rollout file's summary; `None` when it is not a Keel rollout.
///
/// Streams the file and parses only the lines a summary needs (the session meta, the first
/// user message, names), so a huge rollout costs its longest line in memory, not its size.
pub async fn summarise(path: &Path) -> Option<ConversationSummary> {
    let owned = path.to_path_buf();
    super::reader_thread::on_reader_thread(move || summarise_blocking(&owned))
        .await
        .flatten()
}

pub(super) fn summarise_blocking(path: &Path) -> Option<ConversationSummary> {
    let mut lines = RolloutLines::open(path).ok()?;
    let mut meta = None;
    let mut preview = None;
    let mut name = None;
    let mut updated_at = String::new();
    let mut has_turns = false;
    loop {
        let need_meta = meta.is_none();
        let need_preview = preview.is_none();
        // Every line's timestamp comes from its first bytes; only the lines a summary uses
        // are read whole.
        let wanted = |_: usize, kind: LineKind, head: &[u8]| {
            if let Some(timestamp) = leading_timestamp(head) {
                updated_at = timestamp;
            }
            if !has_turns && kind == LineKind::EventMsg && is_event(head, b"task_started") {
                has_turns = true;
            }
            match kind {
                LineKind::SessionMeta => need_meta,
                LineKind::EventMsg => need_preview && is_user_message(head),
                LineKind::ThreadName => true,
                _ => false,
            }
        };
        let Ok(Some((_, line))) = lines.next_line_where(wanted) else {
            break;
        };
        let Ok(line) = serde_json::from_slice::<RolloutLine>(line) else {
            continue;
        };
        updated_at = line.timestamp;
        match line.item {
            RolloutItem::SessionMeta(found) if meta.is_none() => meta = Some(found),
            RolloutItem::EventMsg(keel_protocol::EventMsg::UserMessage(message))
                if preview.is_none() =>
            {
                preview = Some(message.message);
            }
            RolloutItem::ThreadName(found) => name = Some(found),
            _ => {}
        }
    }
    let meta = meta?;
    let source = meta.source_or_default();
    Some(ConversationSummary {
        source,
        model_provider: meta.model_provider,
        id: meta.id,
        path: path.to_path_buf(),
        created_at: meta.timestamp,
        cwd: meta.cwd,
        preview: preview.unwrap_or_default(),
        name,
        updated_at,
        has_turns,
        model: meta.model,
    })
}

/// Whether an `event_msg` line is a `user_message`, from its first bytes.
fn is_user_message(line: &[u8]) -> bool {
    is_event(line, b"user_message")
}

/// Whether an `event_msg` line is an event of type `kind`, from its first bytes.
fn is_event(line: &[u8], kind: &[u8]) -> bool {
    let window = &line[..line.len().min(200)];
    let mut needle = br#""payload":{"type":""#.to_vec();
    needle.extend_from_slice(kind);
    needle.push(b'"');
    memchr::memmem::find(window, &needle).is_some()
}

/// The `timestamp` a line starts with (`{"timestamp":"..."`), if it does.
fn leading_timestamp(line: &[u8]) -> Option<String> {
    let rest = line.strip_prefix(br#"{"timestamp":""#)?;
    let end = memchr::memchr(b'"', &rest[..rest.len().min(64)])?;
    String::from_utf8(rest[..end].to_vec()).ok()
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationsPage {
    /// The conversations on this page, newest first.
    pub items: Vec<ConversationSummary>,
    /// Pass to the next call to continue; `None` at the end.
    pub next_cursor: Option<String>,
}

/// A thread that mentions the searched text.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The thread.
    pub summary: ConversationSummary,
    /// Its first message (or its name) that mentions the text, cut around the mention.
    pub snippet: String,
}

/// One page of search results.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// Newest first.
    pub items: Vec<SearchHit>,
    /// Pass back for the next page; `None` at the end.
    pub next_cursor: Option<String>,
}
