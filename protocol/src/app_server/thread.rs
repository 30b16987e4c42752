//! Threads (conversations) and the `thread/*` methods.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ThreadSettings, Turn};
use crate::{AskForApproval, ReasoningEffort, SandboxMode};

/// Whether a thread is loaded and what it is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadStatus {
    /// Recorded but not loaded in this server.
    NotLoaded,
    /// Loaded, no turn running.
    Idle,
    /// Loaded but its engine failed.
    SystemError,
    /// A turn is running.
    #[serde(rename_all = "camelCase")]
    Active {
        /// What the turn is waiting on, if anything.
        active_flags: Vec<ThreadActiveFlag>,
    },
}

/// What an active thread is waiting on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadActiveFlag {
    /// An approval request is pending.
    WaitingOnApproval,
    /// The agent asked the user a question.
    WaitingOnUserInput,
}

/// Where a thread came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionSource {
    /// Spawned by another thread's agent.
    SubAgent(Box<SubAgentSource>),
    /// An interactive CLI.
    Cli,
    /// An editor extension.
    Vscode,
    /// `keel exec`.
    Exec,
    /// The app-server.
    #[default]
    AppServer,
    /// Unknown.
    Unknown,
}

/// Which agent spawned a sub-agent thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubAgentSource {
    /// Spawned by a tool call (`spawn_agent`, or a job worker of `spawn_agents_on_csv`).
    ThreadSpawn {
        /// The spawning thread.
        parent_thread_id: String,
        /// 1 for a child of a top-level thread.
        depth: i32,
        /// A display name, when the agent has one.
        #[serde(default)]
        agent_nickname: Option<String>,
        /// Its task path (`/root/<task>/…`), when it was spawned by task name.
        #[serde(default)]
        agent_path: Option<String>,
        /// Its role, when it has one.
        #[serde(default)]
        agent_role: Option<String>,
    },
    /// Runs a review for another thread.
    Review,
    /// Compacts another thread's history.
    Compact,
    /// Another origin, named.
    Other(String),
}

/// Git metadata of a thread's workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitInfo {
    /// Commit sha.
    pub sha: Option<String>,
    /// Branch name.
    pub branch: Option<String>,
    /// Remote origin URL.
    pub origin_url: Option<String>,
}

/// A conversation as the app-server shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// The conversation id.
    pub id: String,
    /// The first user message, for lists.
    pub preview: String,
    /// `true` when the thread is not recorded on disk.
    pub ephemeral: bool,
    /// The provider id.
    pub model_provider: String,
    /// Creation time, Unix seconds.
    pub created_at: i64,
    /// Last update, Unix seconds.
    pub updated_at: i64,
    /// Whether it is loaded and busy.
    pub status: ThreadStatus,
    /// Its rollout file.
    pub path: Option<PathBuf>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// The Keel version that created it.
    pub cli_version: String,
    /// Where it came from.
    pub source: SessionSource,
    /// A user-chosen name.
    pub name: Option<String>,
    /// Git metadata, when known.
    pub git_info: Option<GitInfo>,
    /// Sub-agent nickname (unused by Keel).
    pub agent_nickname: Option<String>,
    /// Sub-agent role (unused by Keel).
    pub agent_role: Option<String>,
    /// Its turns, when requested (empty otherwise).
    pub turns: Vec<Turn>,
    /// The session tree it belongs to: its own id, or for a sub-agent its parent's (Codex
    /// 0.169 clients need it).
    #[serde(default)]
    pub session_id: String,
    /// The thread it was forked from, if it is a fork (Codex 0.169).
    #[serde(default)]
    pub forked_from_id: Option<String>,
    /// The project it is assigned to; Keel has no projects, so always `null` (Codex 0.169).
    #[serde(default)]
    pub project_id: Option<String>,
    /// How clients read its history: always `legacy` in Keel (turns come with
    /// `thread/read`/`thread/resume`), so clients do not page through `thread/turns/list`.
    #[serde(default = "legacy_history")]
    pub history_mode: String,
    /// The model it uses when loaded, otherwise the one it was recorded with (`null` when
    /// unknown).
    #[serde(default)]
    pub model: Option<String>,
    /// The reasoning effort it uses when loaded (`null` when unset or not loaded).
    #[serde(default)]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The time lists order it by (its last update), Unix seconds.
    #[serde(default)]
    pub recency_at: Option<i64>,
    /// For a sub-agent, the thread that spawned it.
    #[serde(default)]
    pub parent_thread_id: Option<String>,
    /// Where its commands run when loaded: Keel runs them on this machine, the `local`
    /// environment rooted at the working directory (empty for an ephemeral thread and
    /// `null` for one not loaded, as Codex reports).
    #[serde(default)]
    pub environments: Option<Vec<ThreadEnvironment>>,
    /// The section a person moved it into (Codex 0.171).
    #[serde(default)]
    pub section: Option<super::ThreadSection>,
    /// When it entered that section, Unix seconds (Codex 0.171).
    #[serde(default)]
    pub section_entered_at: Option<i64>,
}

/// An environment a thread's commands run in, with the directories it may work in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadEnvironment {
    /// The environment's id (`local` for this machine).
    pub environment_id: String,
    /// The working directory there.
    pub cwd: PathBuf,
    /// The roots the thread works in.
    pub runtime_workspace_roots: Vec<PathBuf>,
}

fn legacy_history() -> String {
    "legacy".to_string()
}

/// Settings a client may set when starting, resuming or forking a thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadOverrides {
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// The provider id.
    #[serde(default)]
    pub model_provider: Option<String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Approval policy.
    #[serde(default)]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox mode.
    #[serde(default)]
    pub sandbox: Option<SandboxMode>,
    /// Sandbox, as a permission profile id (see `permissionProfile/list`); not with `sandbox`.
    #[serde(default)]
    pub permissions: Option<String>,
    /// `config.toml` overrides by dotted key.
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
    /// Replaces the base instructions.
    #[serde(default)]
    pub base_instructions: Option<String>,
    /// Extra developer instructions.
    #[serde(default)]
    pub developer_instructions: Option<String>,
}

/// Params of `thread/start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// Settings for the new thread.
    #[serde(flatten)]
    pub overrides: ThreadOverrides,
    /// Do not record the thread on disk.
    #[serde(default)]
    pub ephemeral: Option<bool>,
    /// Tools this client defines and runs (Codex 0.169, experimental): the model's calls come
    /// back to it as `item/tool/call` requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_tools: Option<Vec<crate::DynamicToolSpec>>,
    /// Where the thread runs (Codex 0.169, experimental): the first is the environment its
    /// commands run and patches are written in; absent: the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<super::TurnEnvironmentParams>>,
}

/// Result of `thread/start`, `thread/resume` and `thread/fork`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartResponse {
    /// The thread.
    pub thread: Thread,
    /// What it runs with.
    #[serde(flatten)]
    pub settings: ThreadSettings,
}

/// Result of `thread/resume`.
pub type ThreadResumeResponse = ThreadStartResponse;
/// Result of `thread/fork`.
pub type ThreadForkResponse = ThreadStartResponse;

/// Params of `thread/resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread to load.
    pub thread_id: String,
    /// Settings to change.
    #[serde(flatten)]
    pub overrides: ThreadOverrides,
}

/// Params of `thread/fork`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkParams {
    /// The thread to copy.
    pub thread_id: String,
    /// Settings for the copy.
    #[serde(flatten)]
    pub overrides: ThreadOverrides,
    /// Do not record the copy on disk (a side conversation).
    #[serde(default)]
    pub ephemeral: bool,
    /// Leave the copied turns out of the answer (the copy still has the whole history).
    #[serde(default)]
    pub exclude_turns: bool,
}

/// Params naming one thread (`thread/archive`, `thread/unarchive`, `thread/unsubscribe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadIdParams {
    /// The thread.
    pub thread_id: String,
}

/// Params of `thread/read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadParams {
    /// The thread.
    pub thread_id: String,
    /// Include its turns.
    #[serde(default)]
    pub include_turns: bool,
}

/// Result of `thread/unarchive` and `thread/rollback`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadResponse {
    /// The thread.
    pub thread: Thread,
}

/// Result of `thread/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReadResponse {
    /// The thread.
    pub thread: Thread,
    /// Whether a person has seen its latest results (`null` for an ephemeral thread and one
    /// that never had a turn; Codex 0.169).
    #[serde(default)]
    pub read_state: Option<super::ThreadReadState>,
}

/// Params of `thread/loaded/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadLoadedListParams {
    /// From the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Result of `thread/loaded/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadLoadedListResponse {
    /// Ids of loaded threads.
    pub data: Vec<String>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// Params of `thread/name/set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSetNameParams {
    /// The thread.
    pub thread_id: String,
    /// Its new name.
    pub name: String,
}

/// Result of `thread/unsubscribe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThreadUnsubscribeStatus {
    /// The thread is not loaded.
    NotLoaded,
    /// This connection was not subscribed.
    NotSubscribed,
    /// This connection no longer receives the thread's notifications.
    Unsubscribed,
}

/// Result of `thread/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadUnsubscribeResponse {
    /// What happened.
    pub status: ThreadUnsubscribeStatus,
}

/// Params of `thread/rollback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRollbackParams {
    /// The thread.
    pub thread_id: String,
    /// How many of the latest turns to drop.
    pub num_turns: u32,
}

/// An empty result (`{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EmptyResponse {}

/// Order of `thread/turns/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortDirection {
    /// Oldest first.
    Asc,
    /// Newest first (the default).
    Desc,
}

/// How much of each turn's items `thread/turns/list` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnItemsView {
    /// No items.
    NotLoaded,
    /// The items (Keel has no shorter summary: the same as `full`).
    Summary,
    /// Every item.
    Full,
}

/// Params of `thread/turns/list` (Codex 0.169): a thread's turns a page at a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListParams {
    /// The thread.
    pub thread_id: String,
    /// Where the previous page ended.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size (default: every turn).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Newest first unless `asc`.
    #[serde(default)]
    pub sort_direction: Option<SortDirection>,
    /// Whether items come with the turns (default `full`).
    #[serde(default)]
    pub items_view: Option<TurnItemsView>,
}

/// Result of `thread/turns/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListResponse {
    /// The page of turns.
    pub data: Vec<Turn>,
    /// Where the next page starts, if there is one.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// Where the page before this one starts, if there is one.
    #[serde(default)]
    pub backwards_cursor: Option<String>,
}

/// Params of `thread/search`: threads whose messages mention a text (Codex 0.169,
/// experimental).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSearchParams {
    /// The text to find (case-insensitive).
    pub search_term: String,
    /// Where to resume (the previous page's `nextCursor`).
    #[serde(default)]
    pub cursor: Option<String>,
    /// Results per page (default 25, at most 200).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Search archived threads instead.
    #[serde(default)]
    pub archived: Option<bool>,
}

/// One thread `thread/search` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSearchResult {
    /// The thread.
    pub thread: Thread,
    /// The first matching message (or the name), cut around the match.
    pub snippet: String,
}

/// Result of `thread/search`, newest thread first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSearchResponse {
    /// One result per matching thread.
    pub data: Vec<ThreadSearchResult>,
    /// Pass as `cursor` for the next page; `null` at the end.
    pub next_cursor: Option<String>,
    /// Codex's cursor back (Keel pages forward only: always `null`).
    #[serde(default)]
    pub backwards_cursor: Option<String>,
}

/// Where a page of `thread/items/list` starts: the `nextCursor` of the previous page, or
/// (with `turnId`) just past an item of that turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ThreadItemsListCursor {
    /// A cursor this server returned.
    Cursor(String),
    /// Just past this item (exclusive), in the direction of the listing.
    Anchor(ThreadItemsListAnchor),
}

/// An item position in `thread/items/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItemsListAnchor {
    /// The item with this id.
    #[serde(rename_all = "camelCase")]
    Item {
        /// The item.
        item_id: String,
    },
}

/// Params of `thread/items/list` (Codex 0.169): a thread's items, a page at a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemsListParams {
    /// The thread.
    pub thread_id: String,
    /// Only this turn's items.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Where to start.
    #[serde(default)]
    pub cursor: Option<ThreadItemsListCursor>,
    /// Page size (default: every item).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Oldest first unless `desc`.
    #[serde(default)]
    pub sort_direction: Option<SortDirection>,
    /// Codex can leave command output out for later; Keel always sends whole items.
    #[serde(default)]
    pub defer_output: Option<serde_json::Value>,
}

/// One item with the turn it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemEntry {
    /// The turn.
    pub turn_id: String,
    /// The item.
    pub item: super::ThreadItem,
    /// When it started (Unix ms); Keel does not record item times: `null`.
    #[serde(default)]
    pub started_at_ms: Option<i64>,
    /// When it completed (Unix ms); `null` in Keel.
    #[serde(default)]
    pub completed_at_ms: Option<i64>,
}

/// Result of `thread/items/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadItemsListResponse {
    /// The page.
    pub data: Vec<ThreadItemEntry>,
    /// Where the next page starts, if there is one.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// Where the page before this one starts, if there is one.
    #[serde(default)]
    pub backwards_cursor: Option<String>,
}
