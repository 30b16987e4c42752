//! Sub-agents: a thread the session's agent spawns becomes a session of its own here. An
//! editor that offers `subagents` (unstable ACP) is told of it on the parent session
//! (`subagent_update`) before any of its traffic, then sees its updates and permission
//! requests under its own id; for any other editor its updates stay out of the conversation
//! and its permission requests are asked on the editor's own session.

use keel_protocol::acp::{SessionUpdate, SubagentUpdate};
use keel_protocol::app_server::{SessionSource, SubAgentSource, Thread};

use crate::agent::Agent;

impl Agent {
    /// Whether the editor shows sub-agents as sessions (`subagents` at `initialize`).
    pub(crate) fn shows_subagents(&self) -> bool {
        self.offered().subagents.is_some()
    }

    /// Registers a thread spawned by a session's agent as a sub-agent session (and announces
    /// it to an editor that shows them); other threads are left alone.
    pub(crate) async fn adopt_subagent(&self, thread: &Thread) {
        let SessionSource::SubAgent(source) = &thread.source else {
            return;
        };
        let SubAgentSource::ThreadSpawn {
            parent_thread_id,
            agent_nickname,
            ..
        } = source.as_ref()
        else {
            return;
        };
        if self.sessions.with(parent_thread_id, |_| ()).is_none() {
            return;
        }
        self.sessions
            .add_child(&thread.id, parent_thread_id, thread.cwd.clone());
        if self.shows_subagents() {
            self.send_update(
                parent_thread_id,
                SessionUpdate::SubagentUpdate(SubagentUpdate {
                    session_id: thread.id.clone(),
                    title: thread.agent_nickname.clone().or(agent_nickname.clone()),
                    description: thread.agent_role.clone(),
                    cwd: Some(thread.cwd.clone()),
                }),
            )
            .await;
        }
    }

    /// Whether an update of thread `id` goes to the editor: a session of its own, or a
    /// sub-agent's when the editor shows them.
    pub(crate) fn shows_updates_of(&self, id: &str) -> bool {
        match self.sessions.with(id, |session| session.parent.is_some()) {
            Some(false) => true,
            Some(true) => self.shows_subagents(),
            None => false,
        }
    }
}
