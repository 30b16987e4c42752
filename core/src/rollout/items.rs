//! What a rollout file holds: its session meta and items, and a conversation read back from it.

use std::path::PathBuf;

use keel_protocol::app_server::SessionSource;
use keel_protocol::{ConversationId, EventMsg};
use serde::{Deserialize, Serialize};

use crate::models::ResponseItem;

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
    /// Who started it: a client kind, or the agent that spawned it (with its parent thread).
    /// Absent in files written before it was recorded: read as a top-level interactive thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SessionSource>,
    /// The id of the model provider it started with (`model_provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
}

impl SessionMeta {
    /// Who started it; a file from before sources were recorded counts as an interactive
    /// top-level thread (Codex's reading of such files).
    pub fn source_or_default(&self) -> SessionSource {
        self.source.clone().unwrap_or(SessionSource::Cli)
    }
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

/// A step of a recorded transcript, as [`read_transcript`](super::read_transcript) hands them out.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "entries are handed out one at a time, never stored"
)]
pub enum TranscriptEntry {
    /// A recorded event (command outputs cut as in [`load_rollout`](super::load_rollout)).
    Event(EventMsg),
    /// The latest `n` turns were dropped.
    Rollback(u32),
}
