//! The handle an embedder holds for one conversation: submit operations, read events.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::Stream;
use keel_protocol::{
    CollabAgentState, CollabAgentStatus, ConversationId, Event, Op, SessionConfiguredEvent,
    Submission, SubmissionId,
};
use tokio::sync::{Mutex, mpsc, watch};

use crate::environment_link::EnvironmentLink;
use crate::error::{CoreError, Result};
use crate::unified_exec::{BackgroundTerminal, UnifiedExecSessions};

/// A running conversation. Dropping the last handle shuts it down and kills its commands.
pub struct Conversation {
    id: ConversationId,
    tx_sub: mpsc::Sender<Submission>,
    rx_event: Mutex<mpsc::Receiver<Event>>,
    next_id: AtomicU64,
    rollout_path: Option<PathBuf>,
    /// Where it stands, kept current by its engine (what an agent waiting for it watches).
    status: Arc<watch::Sender<CollabAgentState>>,
    /// The processes the model left running.
    terminals: Arc<UnifiedExecSessions>,
    /// The thread's goal, shared with its engine.
    goals: Arc<crate::goals::Goals>,
    /// The connection to its remote environment.
    environment: watch::Receiver<EnvironmentLink>,
    /// Where its next turn moves it.
    environment_switch: Arc<EnvironmentSwitch>,
    /// Its MCP servers, which a reload replaces.
    mcp: Arc<crate::mcp_slot::McpSlot>,
    /// Its record, shared with its engine: the only writer of the thread's record.
    record: Option<Arc<dyn crate::RolloutSink>>,
}

/// A move to another environment, made as the conversation's next turn begins.
pub(crate) struct EnvironmentMove {
    /// Where its processes go.
    pub target: crate::processes::ExecTarget,
    /// The environment's name (`None`: unnamed), for sub-agents to follow.
    pub environment: Option<String>,
    /// Its working directory there.
    pub cwd: PathBuf,
}

/// The environment a conversation moves to at its next turn.
#[derive(Default)]
pub(crate) struct EnvironmentSwitch {
    next: std::sync::Mutex<Option<EnvironmentMove>>,
}

impl EnvironmentSwitch {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<EnvironmentMove>> {
        self.next
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The move asked for since the last turn began, if any, taken.
    pub(crate) fn take(&self) -> Option<EnvironmentMove> {
        self.lock().take()
    }
}

/// What a conversation's handle shares with its engine.
pub(crate) struct SharedWithEngine {
    /// The processes the model left running.
    pub terminals: Arc<UnifiedExecSessions>,
    /// The thread's goal.
    pub goals: Arc<crate::goals::Goals>,
    /// The connection to its remote environment.
    pub environment: watch::Receiver<EnvironmentLink>,
    /// Where its next turn moves it.
    pub environment_switch: Arc<EnvironmentSwitch>,
    /// Its MCP servers, which a reload replaces.
    pub mcp: Arc<crate::mcp_slot::McpSlot>,
    /// Its record (none for an ephemeral thread).
    pub record: Option<Arc<dyn crate::RolloutSink>>,
}

impl Conversation {
    pub(crate) fn new(
        id: ConversationId,
        tx_sub: mpsc::Sender<Submission>,
        rx_event: mpsc::Receiver<Event>,
        rollout_path: Option<PathBuf>,
        status: Arc<watch::Sender<CollabAgentState>>,
        shared: SharedWithEngine,
    ) -> Self {
        let SharedWithEngine {
            terminals,
            goals,
            environment,
            environment_switch,
            mcp,
            record,
        } = shared;
        Self {
            id,
            tx_sub,
            rx_event: Mutex::new(rx_event),
            next_id: AtomicU64::new(1),
            rollout_path,
            status,
            terminals,
            goals,
            environment,
            environment_switch,
            mcp,
            record,
        }
    }

    /// Uses `servers` as its MCP servers from its next model request on.
    pub(crate) fn replace_mcp_servers(&self, servers: crate::mcp::McpServers) {
        self.mcp.replace(servers);
    }

    /// Moves the conversation to the environment `config` names (its `exec_server_url` and
    /// token, or this host), working in `cwd` there, from its next turn on. What still runs
    /// in the old environment (background terminals) is stopped when the move happens.
    pub fn move_to_environment(&self, config: &crate::config::Config, cwd: PathBuf) {
        *self.environment_switch.lock() = Some(EnvironmentMove {
            target: crate::processes::ExecTarget::for_config(config),
            environment: config.environment.clone(),
            cwd,
        });
    }

    /// The connection to the exec-server its commands run on, as it changes (it stays
    /// `NotConnected` for a conversation whose commands run on this host).
    pub fn watch_environment_link(&self) -> watch::Receiver<EnvironmentLink> {
        self.environment.clone()
    }

    /// The thread's goal, if it has one.
    pub fn goal(&self) -> Option<keel_protocol::ThreadGoal> {
        self.goals.get()
    }

    /// Creates or edits the thread's goal, then lets the engine record the change (and start
    /// working when the goal is active and nothing runs).
    pub async fn set_goal(
        &self,
        update: crate::goals::GoalUpdate,
        origin: Option<keel_protocol::ThreadGoalMutationOrigin>,
    ) -> std::result::Result<keel_protocol::ThreadGoal, crate::goals::GoalError> {
        let goal = self.goals.set(update)?;
        if let Err(err) = self.submit(Op::GoalChanged { origin }).await {
            tracing::warn!(conversation = %self.id, "goal change not handed to the engine: {err}");
        }
        Ok(goal)
    }

    /// Removes the thread's goal (a running turn finishes, and no other follows); whether
    /// there was one.
    pub async fn clear_goal(
        &self,
        origin: Option<keel_protocol::ThreadGoalMutationOrigin>,
    ) -> bool {
        let cleared = self.goals.clear();
        if cleared && let Err(err) = self.submit(Op::GoalChanged { origin }).await {
            tracing::warn!(conversation = %self.id, "goal change not handed to the engine: {err}");
        }
        cleared
    }

    /// The `exec_command` processes still running between calls, oldest first.
    pub fn background_terminals(&self) -> Vec<BackgroundTerminal> {
        self.terminals.summaries()
    }

    /// Where the conversation stands: running a turn, done with its last one (and its final
    /// message), or shut down.
    pub fn agent_status(&self) -> CollabAgentState {
        self.status.borrow().clone()
    }

    /// Follows [`Self::agent_status`] as it changes.
    pub fn watch_agent_status(&self) -> watch::Receiver<CollabAgentState> {
        self.status.subscribe()
    }

    /// Marks the conversation busy from the moment input is queued, so a waiter never reads
    /// the previous turn's result as the answer to new input.
    pub(crate) fn mark_running(&self) {
        self.status.send_if_modified(|state| {
            if state.status == CollabAgentStatus::Shutdown {
                return false;
            }
            *state = CollabAgentState::new(CollabAgentStatus::Running);
            true
        });
    }

    /// Sets the status a resumed conversation stands at until its next turn.
    pub(crate) fn restore_status(&self, state: CollabAgentState) {
        self.status.send_replace(state);
    }

    /// Queues a submission without waiting (for teardown paths that cannot await).
    pub(crate) fn try_submit(&self, op: Op) -> Result<()> {
        let id = SubmissionId::new(self.next_id.fetch_add(1, Ordering::Relaxed).to_string());
        self.tx_sub
            .try_send(Submission { id, op })
            .map_err(|_| CoreError::ConversationClosed(self.id))
    }

    /// The conversation's id.
    pub fn id(&self) -> ConversationId {
        self.id
    }

    /// The rollout file recording this conversation.
    pub fn rollout_path(&self) -> Option<&Path> {
        self.rollout_path.as_deref()
    }

    /// Records the thread's name through the conversation's own record, so a running turn
    /// and a rename never write it from two places; `false` for a thread that is not recorded.
    pub async fn record_name(&self, name: &str) -> crate::error::Result<bool> {
        let Some(record) = &self.record else {
            return Ok(false);
        };
        record
            .record(&[crate::RolloutItem::ThreadName(name.to_string())])
            .await?;
        Ok(true)
    }

    /// Queues an operation and returns the id its events will carry. User input while a turn
    /// runs joins that turn.
    pub async fn submit(&self, op: Op) -> Result<SubmissionId> {
        let id = SubmissionId::new(self.next_id.fetch_add(1, Ordering::Relaxed).to_string());
        self.submit_with_id(Submission { id: id.clone(), op })
            .await?;
        Ok(id)
    }

    /// Queues a submission whose id the caller chose.
    pub async fn submit_with_id(&self, submission: Submission) -> Result<()> {
        self.tx_sub
            .send(submission)
            .await
            .map_err(|_| CoreError::ConversationClosed(self.id))
    }

    /// The next event. Cancel-safe; events are never lost when the future is dropped.
    /// Errors once the conversation has shut down and every event was read.
    pub async fn next_event(&self) -> Result<Event> {
        self.rx_event
            .lock()
            .await
            .recv()
            .await
            .ok_or(CoreError::ConversationClosed(self.id))
    }

    /// The events as a stream that ends when the conversation shuts down.
    pub fn events(&self) -> impl Stream<Item = Event> + '_ {
        futures::stream::unfold(self, |conversation| async move {
            conversation
                .next_event()
                .await
                .ok()
                .map(|event| (event, conversation))
        })
    }
}

/// A freshly started conversation.
#[non_exhaustive]
pub struct NewConversation {
    /// Its id.
    pub conversation_id: ConversationId,
    /// The handle to drive it.
    pub conversation: Arc<Conversation>,
    /// The configuration it runs with; the first event a client should show.
    pub session_configured: SessionConfiguredEvent,
    /// The client's own tools it offers (given at start, or recorded and brought back on
    /// resume); their calls arrive as `dynamic_tool_call_request` events.
    pub dynamic_tools: Vec<keel_protocol::DynamicToolSpec>,
}
