//! What one conversation does with its sub-agents: spawn them, send them input, close and
//! resume them. Every sub-agent takes one of the tree's thread slots while it is alive.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use keel_protocol::{
    CollabAgentState, CollabAgentStatus, ConversationId, InputItem, Op, ReasoningEffort,
};
use tokio::sync::{OwnedSemaphorePermit, watch};

use super::ConversationHost;
use super::Lineage;
use crate::agent_jobs::JobWorker;
use crate::config::Config;
use crate::conversation::Conversation;
use crate::models::ResponseItem;
use crate::turn_context::TurnContext;

/// How long closing waits for a sub-agent to confirm it has shut down.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a sub-agent operation was refused; the text is what the model reads.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AgentError {
    /// All thread slots are taken.
    #[error(
        "agent limit reached: {0} agents are alive (agents.max_threads); close one with close_agent first"
    )]
    LimitReached(usize),
    /// Sub-agents may not spawn agents of their own.
    #[error("this agent cannot spawn agents (agents.max_depth = {0})")]
    TooDeep(u32),
    /// No agent of this conversation has the id.
    #[error("no agent with id `{0}` (ids are the agent_id spawn_agent returned)")]
    NotFound(String),
    /// The agent was closed.
    #[error("agent `{0}` is closed; resume_agent reopens it")]
    Closed(ConversationId),
    /// The agent is running already.
    #[error("agent `{0}` is already open")]
    AlreadyOpen(ConversationId),
    /// A live agent of the tree holds the path.
    #[error("agent path `{0}` already exists")]
    PathTaken(String),
    /// The input given is unusable.
    #[error("{0}")]
    BadInput(String),
    /// The engine is shutting down.
    #[error("the engine is shutting down")]
    ShuttingDown,
    /// Starting or driving the agent's conversation failed.
    #[error("{0}")]
    Engine(#[from] crate::error::CoreError),
}

/// A sub-agent this conversation spawned.
struct Child {
    /// Set while it is open.
    live: Option<LiveChild>,
    rollout_path: Option<PathBuf>,
    /// Its state when it was closed.
    last_state: CollabAgentState,
}

struct LiveChild {
    conversation: Arc<Conversation>,
    /// The tree's thread slot it holds until closed.
    _slot: OwnedSemaphorePermit,
}

/// One conversation's view of the agents it spawned.
pub(crate) struct AgentControl {
    manager: Weak<dyn ConversationHost>,
    /// The configuration the conversation started with; sub-agents start from it.
    config: Config,
    own_id: ConversationId,
    lineage: Lineage,
    children: Mutex<HashMap<ConversationId, Child>>,
    /// Where the conversation stands, derived from the events it sends.
    status: super::StatusTracker,
}

impl AgentControl {
    pub(crate) fn new(
        manager: Weak<dyn ConversationHost>,
        config: Config,
        own_id: ConversationId,
        lineage: Lineage,
        status: Arc<watch::Sender<CollabAgentState>>,
    ) -> Self {
        if !lineage.tree.join(&lineage.path, own_id) {
            tracing::warn!(path = %lineage.path, "an agent of this tree already holds the path");
        }
        Self {
            manager,
            config,
            own_id,
            lineage,
            children: Mutex::new(HashMap::new()),
            status: super::StatusTracker::new(status),
        }
    }

    /// The conversation that spawned this one; `None` for one a client started.
    pub(crate) fn parent(&self) -> Option<ConversationId> {
        self.lineage.parent
    }

    /// This conversation's id.
    pub(crate) fn own_id(&self) -> ConversationId {
        self.own_id
    }

    /// This conversation's task path in its tree.
    pub(crate) fn path(&self) -> &str {
        &self.lineage.path
    }

    /// The live agents of this conversation's tree.
    pub(crate) fn tree(&self) -> &Arc<super::AgentTree> {
        &self.lineage.tree
    }

    /// A live conversation of this process (any agent of the tree).
    pub(crate) fn conversation(&self, id: ConversationId) -> Result<Arc<Conversation>, AgentError> {
        self.manager()?
            .get(id)
            .ok_or_else(|| AgentError::NotFound(id.to_string()))
    }

    /// Moves the conversation's own status on for an event it is sending.
    pub(crate) fn track_status(
        &self,
        sub_id: &keel_protocol::SubmissionId,
        msg: &keel_protocol::EventMsg,
    ) {
        self.status.track(sub_id, msg);
    }

    fn children(&self) -> MutexGuard<'_, HashMap<ConversationId, Child>> {
        self.children
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn manager(&self) -> Result<Arc<dyn ConversationHost>, AgentError> {
        self.manager.upgrade().ok_or(AgentError::ShuttingDown)
    }

    /// The configuration this conversation started with.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The job row this conversation works on, when it is a job worker.
    #[cfg_attr(
        not(feature = "agent-jobs"),
        expect(dead_code, reason = "used by agent jobs only")
    )]
    pub(crate) fn worker(&self) -> Option<&Arc<JobWorker>> {
        self.lineage.worker.as_ref()
    }

    /// Whether this conversation is offered the tools that spawn sub-agents.
    pub(crate) fn may_spawn(&self) -> bool {
        self.lineage.depth < self.config.agents_max_depth && self.lineage.worker.is_none()
    }

    /// The most sub-agents alive at once in this tree.
    #[cfg_attr(
        not(feature = "agent-jobs"),
        expect(dead_code, reason = "used by agent jobs only")
    )]
    pub(crate) fn max_threads(&self) -> usize {
        self.config.agents_max_threads
    }

    /// A sub-agent's configuration: this conversation's, with the settings its turns run
    /// with now (a client may have changed them) and the model the caller asks for.
    pub(crate) fn child_config(
        &self,
        context: &TurnContext,
        model: Option<String>,
        effort: Option<ReasoningEffort>,
    ) -> Config {
        let mut config = self.config.clone();
        config.cwd = context.cwd.clone();
        config.approval_policy = context.approval_policy;
        config.sandbox_policy = context.sandbox_policy.clone();
        // Where the conversation runs now (it may have moved since it started).
        context.exec_target.apply_to(&mut config);
        config.environment = context.environment.clone();
        let settings = context.client.settings();
        config.model = model.unwrap_or_else(|| settings.model.clone());
        config.model_reasoning_effort = effort.or_else(|| settings.reasoning_effort.clone());
        // The client's own tools answer to the thread that registered them, not to its
        // sub-agents.
        config.dynamic_tools.clear();
        config
    }

    /// Waits for one of the tree's thread slots (job workers queue for them).
    #[cfg_attr(
        not(feature = "agent-jobs"),
        expect(dead_code, reason = "used by agent jobs only")
    )]
    pub(crate) async fn acquire_slot(&self) -> Result<OwnedSemaphorePermit, AgentError> {
        self.lineage
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| AgentError::ShuttingDown)
    }

    /// Thread slots free in this tree right now.
    #[cfg_attr(
        not(feature = "agent-jobs"),
        expect(dead_code, reason = "used by agent jobs only")
    )]
    pub(crate) fn free_slots(&self) -> usize {
        self.lineage.slots.available_permits()
    }

    fn try_slot(&self) -> Result<OwnedSemaphorePermit, AgentError> {
        self.lineage
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| AgentError::LimitReached(self.config.agents_max_threads))
    }

    /// Spawns a recorded sub-agent that starts working on `input` at once, as `task` (its
    /// path is this conversation's path and `task`; `None` names it `agent_<n>`).
    pub(crate) async fn spawn(
        &self,
        config: Config,
        history: Vec<ResponseItem>,
        input: Vec<InputItem>,
        task: Option<&str>,
        parent_turn: &str,
    ) -> Result<(ConversationId, Arc<Conversation>), AgentError> {
        if !self.may_spawn() {
            return Err(AgentError::TooDeep(self.config.agents_max_depth));
        }
        let task = task.map_or_else(
            || format!("agent_{}", self.children().len() + 1),
            str::to_string,
        );
        let path = format!("{}/{task}", self.lineage.path);
        if self.lineage.tree.holds(&path) {
            return Err(AgentError::PathTaken(path));
        }
        let slot = self.try_slot()?;
        let manager = self.manager()?;
        let new = manager
            .clone()
            .spawn_child(
                config,
                history,
                false,
                self.lineage
                    .child(self.own_id, None, &task, Some(parent_turn)),
            )
            .await?;
        let conversation = new.conversation;
        conversation.mark_running();
        if let Err(err) = conversation.submit(Op::UserInput { items: input }).await {
            manager.remove(new.conversation_id);
            return Err(err.into());
        }
        self.children().insert(
            new.conversation_id,
            Child {
                live: Some(LiveChild {
                    conversation: conversation.clone(),
                    _slot: slot,
                }),
                rollout_path: conversation.rollout_path().map(PathBuf::from),
                last_state: CollabAgentState::new(CollabAgentStatus::PendingInit),
            },
        );
        Ok((new.conversation_id, conversation))
    }

    /// Spawns an unrecorded job worker holding `slot`; the caller owns it and shuts it down.
    #[cfg_attr(
        not(feature = "agent-jobs"),
        expect(dead_code, reason = "used by agent jobs only")
    )]
    pub(crate) async fn spawn_worker(
        &self,
        config: Config,
        input: Vec<InputItem>,
        worker: Arc<JobWorker>,
        traceparent: Option<String>,
    ) -> Result<Arc<Conversation>, AgentError> {
        let manager = self.manager()?;
        let new = manager
            .clone()
            .spawn_child(
                config,
                Vec::new(),
                true,
                self.lineage
                    .child(self.own_id, Some(worker), "job_worker", None),
            )
            .await?;
        new.conversation.mark_running();
        let submitted = async {
            if let Some(traceparent) = traceparent {
                new.conversation
                    .submit(Op::NextTurnTraceContext { traceparent })
                    .await?;
            }
            new.conversation
                .submit(Op::UserInput { items: input })
                .await
        };
        if let Err(err) = submitted.await {
            manager.remove(new.conversation_id);
            return Err(err.into());
        }
        Ok(new.conversation)
    }

    /// Shuts a conversation this one owns down and forgets it in the manager; waits (a
    /// bounded time) until it has stopped its commands.
    pub(crate) async fn shut_down(&self, conversation: &Conversation) {
        let mut status = conversation.watch_agent_status();
        if conversation.submit(Op::Shutdown).await.is_ok() {
            let stopped = status.wait_for(|s| s.status == CollabAgentStatus::Shutdown);
            if tokio::time::timeout(CLOSE_TIMEOUT, stopped).await.is_err() {
                tracing::warn!(agent = %conversation.id(), "sub-agent did not confirm its shutdown");
            }
        }
        if let Ok(manager) = self.manager() {
            manager.remove(conversation.id());
        }
    }

    /// Parses an agent id the model gave.
    pub(crate) fn parse_id(id: &str) -> Result<ConversationId, AgentError> {
        id.trim()
            .parse()
            .map_err(|_| AgentError::NotFound(id.to_string()))
    }

    /// The open sub-agent with this id.
    pub(crate) fn live(&self, id: ConversationId) -> Result<Arc<Conversation>, AgentError> {
        match self.children().get(&id) {
            None => Err(AgentError::NotFound(id.to_string())),
            Some(Child { live: None, .. }) => Err(AgentError::Closed(id)),
            Some(Child {
                live: Some(live), ..
            }) => Ok(live.conversation.clone()),
        }
    }

    /// Sends input to an open sub-agent, interrupting what it does first if asked.
    pub(crate) async fn send_input(
        &self,
        id: ConversationId,
        input: Vec<InputItem>,
        interrupt: bool,
    ) -> Result<(), AgentError> {
        let conversation = self.live(id)?;
        if interrupt {
            // Input sent while the interrupted turn winds down would join that turn and be
            // lost with it: wait (bounded) until it has ended, so the input starts a new one.
            let mut status = conversation.watch_agent_status();
            conversation.submit(Op::Interrupt).await?;
            let ended = status.wait_for(|s| s.status != CollabAgentStatus::Running);
            if tokio::time::timeout(CLOSE_TIMEOUT, ended).await.is_err() {
                tracing::warn!(agent = %id, "sub-agent still running after an interrupt");
            }
        }
        conversation.mark_running();
        conversation.submit(Op::UserInput { items: input }).await?;
        Ok(())
    }

    /// Each agent's state, keyed by the id as given (unknown ids are `notFound`).
    pub(crate) fn states(&self, ids: &[String]) -> BTreeMap<String, CollabAgentState> {
        let children = self.children();
        ids.iter()
            .map(|raw| {
                let state = Self::parse_id(raw)
                    .ok()
                    .and_then(|id| children.get(&id))
                    .map(|child| match &child.live {
                        Some(live) => live.conversation.agent_status(),
                        None => child.last_state.clone(),
                    })
                    .unwrap_or_else(|| CollabAgentState::new(CollabAgentStatus::NotFound));
                (raw.clone(), state)
            })
            .collect()
    }

    /// Status receivers of the open agents among `ids`.
    pub(crate) fn watchers(&self, ids: &[String]) -> Vec<watch::Receiver<CollabAgentState>> {
        let children = self.children();
        ids.iter()
            .filter_map(|raw| Self::parse_id(raw).ok())
            .filter_map(|id| children.get(&id)?.live.as_ref())
            .map(|live| live.conversation.watch_agent_status())
            .collect()
    }

    /// Closes an open sub-agent (its commands are killed) and frees its slot; returns its
    /// state before closing.
    pub(crate) async fn close(&self, id: ConversationId) -> Result<CollabAgentState, AgentError> {
        let live = {
            let mut children = self.children();
            let child = children
                .get_mut(&id)
                .ok_or_else(|| AgentError::NotFound(id.to_string()))?;
            child.live.take().ok_or(AgentError::Closed(id))?
        };
        let before = live.conversation.agent_status();
        self.shut_down(&live.conversation).await;
        if let Some(child) = self.children().get_mut(&id) {
            child.last_state = before.clone();
        }
        Ok(before)
    }

    /// Reopens a closed sub-agent from its record (one of this conversation's, or any
    /// recorded conversation with that id, in the manager's rollout store); it waits for
    /// input.
    pub(crate) async fn resume(
        &self,
        id: ConversationId,
        context: &TurnContext,
    ) -> Result<CollabAgentState, AgentError> {
        if !self.may_spawn() {
            return Err(AgentError::TooDeep(self.config.agents_max_depth));
        }
        let known = self.children().get(&id).map(|child| {
            (
                child.live.is_some(),
                child.rollout_path.clone(),
                child.last_state.clone(),
            )
        });
        let (path, state) = match known {
            Some((true, _, _)) => return Err(AgentError::AlreadyOpen(id)),
            Some((false, path, state)) => (path, state),
            None => (None, CollabAgentState::new(CollabAgentStatus::Completed)),
        };
        let manager = self.manager()?;
        // A conversation open anywhere in this process (this one, its parent, a thread a
        // client resumed) must not get a second engine writing the same rollout.
        if manager.get(id).is_some() {
            return Err(AgentError::AlreadyOpen(id));
        }
        let slot = self.try_slot()?;
        let config = self.child_config(context, None, None);
        let new = manager
            .resume_conversation(
                config,
                id,
                path.as_deref(),
                self.lineage
                    .child(self.own_id, None, &format!("agent_{id}"), None),
            )
            .await?
            .ok_or_else(|| AgentError::NotFound(id.to_string()))?;
        // It runs no turn until it gets input: it stands where it stood when closed.
        let state = if state.status.is_final() {
            state
        } else {
            CollabAgentState::new(CollabAgentStatus::Interrupted)
        };
        new.conversation.restore_status(state.clone());
        let rollout_path = new
            .conversation
            .rollout_path()
            .map(std::path::Path::to_path_buf);
        self.children().insert(
            id,
            Child {
                live: Some(LiveChild {
                    conversation: new.conversation,
                    _slot: slot,
                }),
                rollout_path,
                last_state: state.clone(),
            },
        );
        Ok(state)
    }

    /// Closes every open sub-agent (when this conversation shuts down).
    pub(crate) async fn close_all(&self) {
        let open: Vec<ConversationId> = self
            .children()
            .iter()
            .filter(|(_, child)| child.live.is_some())
            .map(|(id, _)| *id)
            .collect();
        for id in open {
            if let Err(err) = self.close(id).await {
                tracing::debug!(agent = %id, "closing sub-agent: {err}");
            }
        }
    }
}

impl Drop for AgentControl {
    /// A conversation that goes away takes its sub-agents with it, and leaves its tree.
    fn drop(&mut self) {
        self.lineage.tree.leave(&self.lineage.path, self.own_id);
        let manager = self.manager.upgrade();
        for (id, child) in self.children().drain() {
            if let Some(live) = child.live {
                if let Err(err) = live.conversation.try_submit(Op::Shutdown) {
                    tracing::debug!(agent = %id, "sub-agent already stopped: {err}");
                }
                if let Some(manager) = &manager {
                    manager.remove(id);
                }
            }
        }
    }
}
