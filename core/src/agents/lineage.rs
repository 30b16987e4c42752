//! A conversation's place in its agent tree: who spawned it, how deep it is, and the thread
//! slots the whole tree shares.

use std::sync::Arc;

use keel_protocol::ConversationId;
use tokio::sync::Semaphore;

use super::tree::AgentTree;
use crate::agent_jobs::JobWorker;
use crate::config::Config;

/// Where a conversation sits among the agents of one top-level conversation.
#[derive(Clone)]
pub(crate) struct Lineage {
    /// The conversation that spawned it; `None` for one a client started.
    pub parent: Option<ConversationId>,
    /// 0 for a client's conversation, 1 for its sub-agents, ...
    pub depth: u32,
    /// One permit per sub-agent alive, shared by the whole tree (`agents.max_threads`).
    pub slots: Arc<Semaphore>,
    /// The job row this conversation works on, when it is a job worker.
    pub worker: Option<Arc<JobWorker>>,
    /// Its task path: `/root` for a client's conversation, `<parent's path>/<task name>` below.
    pub path: String,
    /// The live agents of the tree by path, with their mailboxes, shared by the whole tree.
    pub tree: Arc<AgentTree>,
    /// The top-level conversation of the tree; `None` for that conversation itself.
    pub root: Option<ConversationId>,
    /// The parent's turn that spawned it, when known.
    pub parent_turn: Option<String>,
    /// The top-level conversation's turn that led to it, when known.
    pub root_turn: Option<String>,
}

impl Lineage {
    /// The lineage of a conversation a client starts: the root of a new tree.
    pub(crate) fn root(config: &Config) -> Self {
        Self {
            parent: None,
            depth: 0,
            slots: Arc::new(Semaphore::new(config.agents_max_threads)),
            worker: None,
            path: crate::client::ROOT_AGENT.to_string(),
            tree: Arc::new(AgentTree::default()),
            root: None,
            parent_turn: None,
            root_turn: None,
        }
    }

    /// The lineage of a conversation `parent` spawns as `task` in its turn `parent_turn`.
    pub(crate) fn child(
        &self,
        parent: ConversationId,
        worker: Option<Arc<JobWorker>>,
        task: &str,
        parent_turn: Option<&str>,
    ) -> Self {
        let parent_turn = parent_turn.map(str::to_string);
        Self {
            parent: Some(parent),
            depth: self.depth + 1,
            slots: self.slots.clone(),
            worker,
            path: format!("{}/{task}", self.path),
            tree: self.tree.clone(),
            root: Some(self.root.unwrap_or(parent)),
            root_turn: self.root_turn.clone().or_else(|| parent_turn.clone()),
            parent_turn,
        }
    }
}
