//! Sub-agents: conversations a conversation spawns, messages, waits for and closes, all
//! limited by `agents.max_threads` across one tree of conversations.

mod control;
mod drain;
mod host;
#[cfg(feature = "agent-jobs")]
mod job_workers;
mod lineage;
mod status;
mod tree;

pub(crate) use control::{AgentControl, AgentError};
pub(crate) use drain::drain_unobserved;
pub(crate) use host::ConversationHost;
#[cfg(feature = "agent-jobs")]
pub(crate) use job_workers::ManagerWorkers;
pub(crate) use lineage::Lineage;
pub(crate) use status::{StatusTracker, wait_any_final};
pub(crate) use tree::{AgentTree, MailboxUpdate};
