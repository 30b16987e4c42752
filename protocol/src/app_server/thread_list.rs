//! `thread/list`: which recorded threads a client sees, with every filter of Codex 0.171
//! (stable and experimental) so its TUI's agent labels and command center list what they
//! mean to.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::{SessionSource, SortDirection, SubAgentSource, Thread};

/// Where a thread came from, flattened to the names `sourceKinds` filters on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadSourceKind {
    /// An interactive CLI.
    Cli,
    /// An editor extension.
    Vscode,
    /// `exec`.
    Exec,
    /// A client of the app-server.
    AppServer,
    /// A sub-agent of another kind than the ones below.
    SubAgent,
    /// A review sub-agent.
    SubAgentReview,
    /// A compaction sub-agent.
    SubAgentCompact,
    /// A thread an agent spawned (`spawn_agent`, a job worker).
    SubAgentThreadSpawn,
    /// A named other sub-agent.
    SubAgentOther,
    /// Anything else.
    Unknown,
}

impl ThreadSourceKind {
    /// Every kind, in the schema's order.
    pub const ALL: [Self; 10] = [
        Self::Cli,
        Self::Vscode,
        Self::Exec,
        Self::AppServer,
        Self::SubAgent,
        Self::SubAgentReview,
        Self::SubAgentCompact,
        Self::SubAgentThreadSpawn,
        Self::SubAgentOther,
        Self::Unknown,
    ];

    /// The kinds listed when a request names none (Codex's interactive sources).
    pub const INTERACTIVE: [Self; 2] = [Self::Cli, Self::Vscode];

    /// The name on the wire (`"subAgentThreadSpawn"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cli => "cli",
            Self::Vscode => "vscode",
            Self::Exec => "exec",
            Self::AppServer => "appServer",
            Self::SubAgent => "subAgent",
            Self::SubAgentReview => "subAgentReview",
            Self::SubAgentCompact => "subAgentCompact",
            Self::SubAgentThreadSpawn => "subAgentThreadSpawn",
            Self::SubAgentOther => "subAgentOther",
            Self::Unknown => "unknown",
        }
    }

    /// The kind named `name`, as [`Self::as_str`] writes it.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl SessionSource {
    /// The kind `sourceKinds` filters this source by.
    pub fn kind(&self) -> ThreadSourceKind {
        match self {
            Self::Cli => ThreadSourceKind::Cli,
            Self::Vscode => ThreadSourceKind::Vscode,
            Self::Exec => ThreadSourceKind::Exec,
            Self::AppServer => ThreadSourceKind::AppServer,
            Self::Unknown => ThreadSourceKind::Unknown,
            Self::SubAgent(source) => match source.as_ref() {
                SubAgentSource::ThreadSpawn { .. } => ThreadSourceKind::SubAgentThreadSpawn,
                SubAgentSource::Review => ThreadSourceKind::SubAgentReview,
                SubAgentSource::Compact => ThreadSourceKind::SubAgentCompact,
                SubAgentSource::Other(_) => ThreadSourceKind::SubAgentOther,
            },
        }
    }

    /// The thread whose agent spawned this one, for a spawned thread.
    pub fn parent_thread_id(&self) -> Option<&str> {
        match self {
            Self::SubAgent(source) => match source.as_ref() {
                SubAgentSource::ThreadSpawn {
                    parent_thread_id, ..
                } => Some(parent_thread_id),
                _ => None,
            },
            _ => None,
        }
    }
}

/// What `thread/list` orders by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSortKey {
    /// When the thread was created (the default).
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
    /// When it last had activity a person would notice (Keel: when it last changed).
    RecencyAt,
    /// Its place in its section (needs a `sectionId`).
    SectionPosition,
}

/// `cwd` of `thread/list`: one directory or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ThreadListCwdFilter {
    /// One directory.
    One(PathBuf),
    /// Any of these directories.
    Many(Vec<PathBuf>),
}

impl ThreadListCwdFilter {
    /// The directories, as a list.
    pub fn paths(&self) -> Vec<PathBuf> {
        match self {
            Self::One(path) => vec![path.clone()],
            Self::Many(paths) => paths.clone(),
        }
    }
}

/// Params of `thread/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListParams {
    /// From the previous page's `nextCursor` (or `backwardsCursor`, with the other direction).
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size (default 25).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only threads whose cwd is this, or one of these.
    #[serde(default)]
    pub cwd: Option<ThreadListCwdFilter>,
    /// Only threads whose preview or name contains this (case-insensitive).
    #[serde(default)]
    pub search_term: Option<String>,
    /// List archived threads instead.
    #[serde(default)]
    pub archived: Option<bool>,
    /// Only threads of these kinds; omitted or empty: interactive threads only.
    #[serde(default)]
    pub source_kinds: Option<Vec<ThreadSourceKind>>,
    /// Only threads recorded with these model providers; empty: all.
    #[serde(default)]
    pub model_providers: Option<Vec<String>>,
    /// Only these threads (at most 100); an empty list matches nothing.
    #[serde(default)]
    pub included_thread_ids: Option<Vec<String>>,
    /// Never these threads (at most 100).
    #[serde(default)]
    pub excluded_thread_ids: Option<Vec<String>>,
    /// Threads spawned, at any depth, from this one (experimental).
    #[serde(default)]
    pub ancestor_thread_id: Option<String>,
    /// Threads spawned directly by this one (experimental).
    #[serde(default)]
    pub parent_thread_id: Option<String>,
    /// What to order by (default `created_at`).
    #[serde(default)]
    pub sort_key: Option<ThreadSortKey>,
    /// Which way (default newest first).
    #[serde(default)]
    pub sort_direction: Option<SortDirection>,
    /// Omitted: every section; `null`: unsectioned threads; an id: that section's threads.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub section_id: Option<Option<String>>,
    /// Hosted backends only: a non-empty list is refused.
    #[serde(default)]
    pub originators: Option<Vec<String>>,
    /// History visible to the current ChatGPT account only.
    #[serde(default)]
    pub current_account_only: bool,
    /// Answer from the index without checking the rollouts.
    #[serde(default)]
    pub use_state_db_only: bool,
    /// Threads of this project (experimental; Keel has no projects).
    #[serde(default)]
    pub project_id: Option<String>,
    /// Threads attached to this one (experimental; Keel has no attachments).
    #[serde(default)]
    pub attached_to_thread_id: Option<String>,
    /// Whether attached threads are listed too (experimental).
    #[serde(default)]
    pub include_attached_threads: Option<bool>,
}

/// Keeps "present but `null`" apart from "absent" (`Some(None)` against `None`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Result of `thread/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListResponse {
    /// Threads, in the order asked for.
    pub data: Vec<Thread>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
    /// Pass as `cursor` with the other `sortDirection` to page back from this page's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backwards_cursor: Option<String>,
    /// The read state of each listed thread, by id (Codex 0.169).
    #[serde(default)]
    pub read_states: std::collections::BTreeMap<String, super::ThreadReadState>,
}
