//! One conversation's engine: the submission loop, the shared state its turns work on, and
//! the event channel back to the client.
//!
//! The submission loop never blocks on a turn: each turn runs on its own task so that
//! interrupts, approvals and extra input are handled while it runs.

mod client_docs;
mod compact;
mod environment;
mod goal_accounting;
mod hook_points;
mod host;
mod input_items;
mod ops;
mod pending_answers;
mod remote_skills;
mod request_metadata;
mod review;
mod sampling;
mod submission_loop;
mod task;
mod user_shell;
mod user_turn;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use keel_protocol::{
    CallId, ConversationId, Event, EventMsg, ReviewDecision, SubmissionId, TokenUsage,
    TokenUsageInfo,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::turn_context::TurnContext;
use pending_answers::PendingAnswers;
pub(crate) use submission_loop::submission_loop;

use crate::agents::AgentControl;
use crate::mcp::{McpServers, McpToolCatalog};
use crate::models::ResponseItem;
use crate::processes::{ExecTarget, ProcessLayer};
use crate::rollout::{RolloutItem, RolloutSink, is_persisted_event};
use crate::shell_snapshot::ShellSnapshots;
use crate::tools::DynTool;
use crate::unified_exec::UnifiedExecSessions;

/// A running turn, as the submission loop sees it.
struct ActiveTurn {
    sub_id: SubmissionId,
    cancel: CancellationToken,
}

/// State shared between the submission loop and the running turn.
struct SessionState {
    history: Vec<ResponseItem>,
    /// Input that arrived while a turn was running; the turn picks it up before sampling.
    pending_input: Vec<ResponseItem>,
    approved_commands: HashSet<Vec<String>>,
    token_info: Option<TokenUsageInfo>,
    /// Total tokens of the latest model response, the measure of how full the context is;
    /// cleared by a compaction until the next response reports again.
    last_response_tokens: Option<u64>,
    turn_context: Arc<TurnContext>,
    active_turn: Option<ActiveTurn>,
    /// The task of the most recent turn; the next turn waits for it so events never interleave.
    last_turn: Option<JoinHandle<()>>,
    /// The output schema `Op::NextTurnOutputSchema` set for the next turn.
    /// The remote span `Op::NextTurnTraceContext` named as the next turn's parent.
    next_traceparent: Option<String>,
    next_output_schema: Option<serde_json::Value>,
    /// The conversation's own history while a review turn works on a fresh one.
    review_parent_history: Option<Vec<ResponseItem>>,
    /// How many times the history was compacted in this process: the number of the context
    /// window requests now fill.
    window_number: u64,
    /// The unique id of that window, told to the provider.
    context_window_id: String,
    /// Whether the conversation started empty (`new`), from recorded history (`resumed`) or,
    /// for a sub-agent, from its parent's (`warm_fork`).
    history_initialization: &'static str,
}

/// What a session works with outside itself: where commands run, its place in the agent
/// tree, and its MCP servers.
pub(crate) struct SessionLinks {
    pub exec_target: ExecTarget,
    /// Where the connection to a remote environment is reported.
    pub environment_link: Arc<tokio::sync::watch::Sender<crate::EnvironmentLink>>,
    /// Where the conversation's embedder asked it to move.
    pub environment_switch: Arc<crate::conversation::EnvironmentSwitch>,
    pub agents: AgentControl,
    pub mcp: Arc<crate::mcp_slot::McpSlot>,
    /// The embedder's own tools, offered after the built-ins.
    pub tools: Arc<[Arc<dyn DynTool>]>,
    /// The client's files and terminals, where it offers them.
    pub client_backends: crate::ClientBackends,
}

/// The engine side of one conversation.
pub(crate) struct Session {
    id: ConversationId,
    tx_event: mpsc::Sender<Event>,
    state: Mutex<SessionState>,
    /// Commands and patches waiting for the client's decision.
    pub(super) approvals: PendingAnswers<CallId, ReviewDecision>,
    /// Woken when input from outside (a steer, an injected item, another agent's message)
    /// joins the running turn: a `sleep` or `wait_agent` ends early for it.
    input_arrived: tokio::sync::Notify,
    /// `request_user_input` calls waiting for the user's answers.
    pub(super) user_inputs: PendingAnswers<CallId, keel_protocol::UserInputResponse>,
    /// Calls of the client's own tools waiting for its answers.
    pub(super) dynamic_calls: PendingAnswers<CallId, keel_protocol::DynamicToolResponse>,
    rollout: Option<Arc<dyn RolloutSink>>,
    /// Where the conversation's commands run; dropping it kills them all.
    processes: ProcessLayer,
    /// The model's live `exec_command` sessions.
    unified_exec: Arc<UnifiedExecSessions>,
    /// Captured login environments, replayed instead of running the profile per command.
    shell_snapshots: ShellSnapshots,
    /// The sub-agents this conversation spawned, its place in the agent tree and its
    /// status as its parent sees it.
    agents: AgentControl,
    /// The external MCP servers whose tools the model is offered.
    mcp: Arc<crate::mcp_slot::McpSlot>,
    /// Questions MCP servers asked the user, by server and request id, waiting for answers.
    #[cfg(feature = "mcp")]
    pub(super) elicitations: PendingAnswers<String, rmcp::model::ElicitResult>,
    /// The embedder's own tools.
    embedder_tools: Arc<[Arc<dyn DynTool>]>,
    /// The first failed rollout write, until the running turn reports it (once).
    rollout_failure: Mutex<Option<String>>,
    /// Whether a rollout write ever failed (later failures are only logged).
    rollout_failed: std::sync::atomic::AtomicBool,
    /// Whether hooks held back for lack of trust were reported (once per conversation).
    pub(super) hook_warnings_sent: std::sync::atomic::AtomicBool,
    /// Whether a remote environment's `AGENTS.md` were read (a local thread's are read at
    /// its start).
    pub(super) environment_docs_read: std::sync::atomic::AtomicBool,
    /// Where the embedder asked the conversation to move, applied as a turn begins.
    pub(super) environment_switch: Arc<crate::conversation::EnvironmentSwitch>,
    /// Whether the MCP servers' start-up reports have reached the event stream.
    mcp_reported: tokio::sync::watch::Sender<bool>,
    /// Whether the `SessionStart` hooks ran (before the first prompt).
    pub(super) session_started: std::sync::atomic::AtomicBool,
    /// The thread's goal, shared with the conversation's handle.
    goals: Arc<crate::goals::Goals>,
    /// Workspace checkpoints around each turn (recorded threads with `features.checkpoints`).
    checkpoints: Option<Arc<crate::checkpoints::Checkpoints>>,
    /// Code mode's running scripts and stored values.
    code_cells: Arc<crate::code_mode::CellStore>,
}

impl Session {
    pub(crate) fn new(
        id: ConversationId,
        turn_context: TurnContext,
        history: Vec<ResponseItem>,
        rollout: Option<Arc<dyn RolloutSink>>,
        tx_event: mpsc::Sender<Event>,
        links: SessionLinks,
    ) -> Self {
        let SessionLinks {
            exec_target,
            environment_link,
            environment_switch,
            agents,
            mcp,
            tools,
            client_backends,
        } = links;
        let snapshot_dir = turn_context.keel_home().join("shell-snapshots");
        // Nothing to report without servers (and nothing starts them).
        let mcp_reported = tokio::sync::watch::Sender::new(mcp.current().is_empty());
        let history_initialization = match (history.is_empty(), &turn_context.origin) {
            (true, _) => "new",
            (false, Some(_)) => "warm_fork",
            (false, None) => "resumed",
        };
        Self {
            id,
            tx_event,
            state: Mutex::new(SessionState {
                history,
                pending_input: Vec::new(),
                approved_commands: HashSet::new(),
                token_info: None,
                last_response_tokens: None,
                turn_context: Arc::new(turn_context),
                active_turn: None,
                last_turn: None,
                next_output_schema: None,
                next_traceparent: None,
                review_parent_history: None,
                window_number: 0,
                context_window_id: uuid::Uuid::now_v7().to_string(),
                history_initialization,
            }),
            approvals: PendingAnswers::new("approval"),
            input_arrived: tokio::sync::Notify::new(),
            user_inputs: PendingAnswers::new("answers"),
            dynamic_calls: PendingAnswers::new("tool output"),
            rollout,
            processes: ProcessLayer::new(exec_target, environment_link)
                .with_client(id, client_backends),
            unified_exec: Arc::new(UnifiedExecSessions::default()),
            shell_snapshots: ShellSnapshots::new(snapshot_dir),
            agents,
            mcp,
            #[cfg(feature = "mcp")]
            elicitations: PendingAnswers::new("elicitation answer"),
            embedder_tools: tools,
            rollout_failure: Mutex::new(None),
            rollout_failed: std::sync::atomic::AtomicBool::new(false),
            hook_warnings_sent: std::sync::atomic::AtomicBool::new(false),
            session_started: std::sync::atomic::AtomicBool::new(false),
            environment_docs_read: std::sync::atomic::AtomicBool::new(false),
            mcp_reported,
            environment_switch,
            goals: Arc::new(crate::goals::Goals::new(id.to_string())),
            checkpoints: None,
            code_cells: Arc::default(),
        }
    }

    /// Code mode's running scripts and the values they stored.
    pub(crate) fn code_cells(&self) -> &Arc<crate::code_mode::CellStore> {
        &self.code_cells
    }

    /// The embedder's own tools, offered after the built-ins.
    pub(crate) fn embedder_tools(&self) -> &[Arc<dyn DynTool>] {
        &self.embedder_tools
    }

    /// The conversation's MCP servers (replaced by a reload).
    pub(crate) fn mcp(&self) -> Arc<McpServers> {
        self.mcp.current()
    }

    /// The MCP tools to offer, once every server has started or failed (reported as
    /// `mcp_startup_update`/`mcp_startup_complete` events by whoever waits first).
    pub(crate) async fn mcp_catalog(&self) -> Arc<McpToolCatalog> {
        let servers = self.mcp();
        if let Some(catalog) = servers.catalog_if_ready() {
            self.mcp_reported().await;
            return catalog;
        }
        let no_submission = SubmissionId::new("");
        let (report, mut reports) = mpsc::unbounded_channel();
        let forward = async {
            // Set once this caller, the one that started the servers, has passed on their
            // reports, or stopped trying (a cancelled turn must not leave the others waiting).
            let mut reported: Option<ReportedOnDrop<'_>> = None;
            while let Some(msg) = reports.recv().await {
                reported.get_or_insert(ReportedOnDrop(&self.mcp_reported));
                self.send_event(&no_submission, msg).await;
            }
            reported.is_some()
        };
        let (catalog, forwarded) = tokio::join!(servers.catalog(report), forward);
        if !forwarded {
            self.mcp_reported().await;
        }
        catalog
    }

    /// Waits until the caller that started the MCP servers has passed on their start-up
    /// reports, so no turn ends before a client hears that a server failed. Bounded: a
    /// reporter that went away must not hold turns up.
    async fn mcp_reported(&self) {
        let mut reported = self.mcp_reported.subscribe();
        let wait = reported.wait_for(|done| *done);
        if tokio::time::timeout(std::time::Duration::from_secs(5), wait)
            .await
            .is_err()
        {
            tracing::debug!("MCP start-up reports not passed on within 5 s; going on");
        }
    }

    /// The conversation's sub-agents.
    pub(crate) fn agents(&self) -> &AgentControl {
        &self.agents
    }

    /// The process layer the conversation's commands run on.
    pub(crate) fn processes(&self) -> &ProcessLayer {
        &self.processes
    }

    /// The conversation's login-shell snapshots.
    pub(crate) fn shell_snapshots(&self) -> &ShellSnapshots {
        &self.shell_snapshots
    }

    /// The model's live `exec_command` sessions.
    pub(crate) fn unified_exec(&self) -> &UnifiedExecSessions {
        &self.unified_exec
    }

    /// The live `exec_command` sessions, shared with the conversation's handle (which lists
    /// them for clients).
    pub(crate) fn unified_exec_shared(&self) -> Arc<UnifiedExecSessions> {
        self.unified_exec.clone()
    }

    pub(crate) fn id(&self) -> ConversationId {
        self.id
    }

    fn state(&self) -> MutexGuard<'_, SessionState> {
        // A panic while holding the lock would poison it; the state is still consistent
        // enough to keep serving (every mutation is a single push or assignment).
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the output schema of the next turn started by user input.
    pub(crate) fn set_next_output_schema(&self, schema: serde_json::Value) {
        self.state().next_output_schema = Some(schema);
    }

    /// Names the remote span the next turn's span continues.
    pub(crate) fn set_turn_traceparent(&self, traceparent: String) {
        self.state().next_traceparent = Some(traceparent);
    }

    /// Takes the remote parent set for the turn that is starting.
    pub(crate) fn take_turn_traceparent(&self) -> Option<String> {
        self.state().next_traceparent.take()
    }

    /// Takes the output schema set for the turn that is starting.
    pub(crate) fn take_next_output_schema(&self) -> Option<serde_json::Value> {
        self.state().next_output_schema.take()
    }

    /// The rollout file, when the conversation is recorded.
    pub(crate) fn rollout_path(&self) -> Option<std::path::PathBuf> {
        self.rollout
            .as_ref()
            .and_then(|rollout| rollout.path().map(std::path::Path::to_path_buf))
    }

    pub(crate) fn turn_context(&self) -> Arc<TurnContext> {
        self.state().turn_context.clone()
    }

    pub(crate) fn set_turn_context(&self, context: TurnContext) {
        self.state().turn_context = Arc::new(context);
    }

    /// Sends an event to the client, recording it in the rollout when it is part of the
    /// transcript. Waits when the client is slow (the channel is bounded).
    pub(crate) async fn send_event(&self, sub_id: &SubmissionId, msg: EventMsg) {
        // The reviewer's raw answer (JSON) is not for people: its rendering follows.
        if matches!(
            msg,
            EventMsg::AgentMessage(_) | EventMsg::AgentMessageDelta(_)
        ) && self.is_reviewing()
        {
            return;
        }
        self.agents.track_status(sub_id, &msg);
        if is_persisted_event(&msg) {
            self.persist(&[RolloutItem::EventMsg(msg.clone())]).await;
        }
        let event = Event {
            id: sub_id.clone(),
            msg,
        };
        if self.tx_event.send(event).await.is_err() {
            tracing::debug!(conversation = %self.id, "event dropped: the conversation handle is gone");
        }
    }

    pub(crate) async fn persist(&self, items: &[RolloutItem]) {
        if let Some(rollout) = &self.rollout
            && let Err(err) = rollout.record(items).await
        {
            tracing::warn!(conversation = %self.id, "could not record rollout: {err}");
            if !self
                .rollout_failed
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                *self
                    .rollout_failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(err.to_string());
            }
        }
    }

    /// The first failed rollout write, once: the turn stops on it rather than go on
    /// unrecorded.
    pub(crate) fn take_rollout_failure(&self) -> Option<String> {
        self.rollout_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Appends items to the model-facing history and the rollout.
    pub(crate) async fn record_items(&self, items: &[ResponseItem]) {
        if items.is_empty() {
            return;
        }
        let reviewing = {
            let mut state = self.state();
            state.history.extend(items.iter().cloned());
            state.review_parent_history.is_some()
        };
        // A reviewer's working items stay out of the rollout: a resumed conversation has
        // only the verdict, as the live one does.
        if reviewing {
            return;
        }
        let rollout: Vec<RolloutItem> = items
            .iter()
            .cloned()
            .map(RolloutItem::ResponseItem)
            .collect();
        self.persist(&rollout).await;
    }

    /// The thread's goal.
    pub(crate) fn goals(&self) -> &crate::goals::Goals {
        &self.goals
    }

    /// Keeps workspace checkpoints around turns, under `dir`.
    pub(crate) fn with_checkpoints(mut self, dir: std::path::PathBuf) -> Self {
        self.checkpoints = Some(Arc::new(crate::checkpoints::Checkpoints::new(dir)));
        self
    }

    /// The workspace checkpoints, when this conversation keeps them.
    pub(crate) fn checkpoints(&self) -> Option<Arc<crate::checkpoints::Checkpoints>> {
        self.checkpoints.clone()
    }

    /// The goal's state, for the conversation's handle.
    pub(crate) fn goals_shared(&self) -> Arc<crate::goals::Goals> {
        self.goals.clone()
    }

    /// Whether a review turn is working on its own history.
    pub(crate) fn is_reviewing(&self) -> bool {
        self.state().review_parent_history.is_some()
    }

    /// Sets the conversation's history aside for a review, which starts from nothing.
    pub(crate) fn begin_review(&self) {
        let mut state = self.state();
        if state.review_parent_history.is_none() {
            let parent = std::mem::take(&mut state.history);
            state.review_parent_history = Some(parent);
        }
    }

    /// Puts the conversation's history back after a review (the reviewer's is dropped).
    pub(crate) fn end_review(&self) {
        let mut state = self.state();
        if let Some(parent) = state.review_parent_history.take() {
            state.history = parent;
        }
    }

    pub(crate) fn history(&self) -> Vec<ResponseItem> {
        self.state().history.clone()
    }

    /// Moves input queued during the turn into history; returns it for the rollout.
    pub(crate) async fn drain_pending_input(&self) -> bool {
        let pending = std::mem::take(&mut self.state().pending_input);
        let any = !pending.is_empty();
        self.record_items(&pending).await;
        any
    }

    /// Tells whoever waits in the running turn (`sleep`, `wait_agent`) that input from
    /// outside joined it.
    pub(crate) fn note_input_arrived(&self) {
        self.input_arrived.notify_waiters();
    }

    /// Resolves once input from outside joins the running turn after this call: the waiter is
    /// registered here, not when first polled, so input that comes before the caller starts
    /// waiting (while it announces the wait) is not missed.
    pub(crate) fn input_arrived(&self) -> futures::future::BoxFuture<'_, ()> {
        let mut notified = Box::pin(self.input_arrived.notified());
        notified.as_mut().enable();
        Box::pin(notified)
    }

    /// Adds an item to send with the next request of the running turn (an image a tool
    /// attached, say).
    pub(crate) fn queue_input(&self, item: ResponseItem) {
        self.state().pending_input.push(item);
    }

    /// Ends the turn unless input is waiting; returns `true` if the turn must continue.
    pub(crate) fn finish_turn_unless_pending(&self, sub_id: &SubmissionId) -> bool {
        let mut state = self.state();
        if !state.pending_input.is_empty() {
            return true;
        }
        if state
            .active_turn
            .as_ref()
            .is_some_and(|t| &t.sub_id == sub_id)
        {
            state.active_turn = None;
        }
        false
    }

    /// Marks the turn over (after an abort or error).
    pub(crate) fn clear_active_turn(&self, sub_id: &SubmissionId) {
        let mut state = self.state();
        if state
            .active_turn
            .as_ref()
            .is_some_and(|t| &t.sub_id == sub_id)
        {
            state.active_turn = None;
        }
    }

    pub(crate) fn is_approved_for_session(&self, argv: &[String]) -> bool {
        self.state().approved_commands.contains(argv)
    }

    pub(crate) fn approve_for_session(&self, argv: Vec<String>) {
        self.state().approved_commands.insert(argv);
    }

    /// Adds a response's usage to the running total and returns the new totals.
    pub(crate) fn add_token_usage(
        &self,
        usage: &TokenUsage,
        context_window: Option<u64>,
    ) -> TokenUsageInfo {
        let mut state = self.state();
        let info = state.token_info.get_or_insert_with(TokenUsageInfo::default);
        info.total_token_usage.add(usage);
        info.last_token_usage = *usage;
        info.model_context_window = context_window;
        info.turn_token_usage
            .get_or_insert_with(TokenUsage::default)
            .add(usage);
        let info = info.clone();
        state.last_response_tokens = Some(usage.total_tokens);
        info
    }

    /// Continues counting from the usage a resumed conversation had recorded.
    pub(crate) fn restore_token_info(&self, mut info: TokenUsageInfo) {
        info.turn_token_usage = None;
        self.state().token_info = Some(info);
    }

    /// Starts counting a new turn's usage from zero.
    pub(crate) fn start_turn_usage(&self) {
        if let Some(info) = self.state().token_info.as_mut() {
            info.turn_token_usage = Some(TokenUsage::default());
        }
    }

    /// Total tokens of the latest response since the last compaction, if one reported any.
    pub(crate) fn last_response_tokens(&self) -> Option<u64> {
        self.state().last_response_tokens
    }

    /// Replaces the model-facing history with a compacted one, recording the replacement in
    /// the rollout as one line.
    pub(crate) async fn replace_history(&self, summary: String, history: Vec<ResponseItem>) {
        {
            let mut state = self.state();
            state.history = history.clone();
            state.last_response_tokens = None;
            state.window_number += 1;
            state.context_window_id = uuid::Uuid::now_v7().to_string();
        }
        self.persist(&[RolloutItem::Compacted(crate::rollout::CompactedItem {
            message: summary,
            replacement_history: Some(history),
        })])
        .await;
    }

    pub(crate) fn token_info(&self) -> Option<TokenUsageInfo> {
        self.state().token_info.clone()
    }
}

/// Marks the MCP start-up reports as passed on when dropped.
struct ReportedOnDrop<'a>(&'a tokio::sync::watch::Sender<bool>);

impl Drop for ReportedOnDrop<'_> {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// The key of an MCP server's question: the server and its request id.
#[cfg(feature = "mcp")]
pub(super) fn elicitation_key(server: &str, request_id: &serde_json::Value) -> String {
    format!("{server}/{request_id}")
}
