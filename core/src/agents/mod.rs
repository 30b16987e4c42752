//! Sub-agents: conversations a conversation spawns, messages, waits for and closes, all
//! limited by `agents.max_threads` across one tree of conversations.

mod control;
mod drain;
mod host;
mod lineage;
mod status;

pub(crate) use control::{AgentControl, AgentError};
pub(crate) use drain::drain_unobserved;
pub(crate) use host::ConversationHost;
pub(crate) use lineage::Lineage;
pub(crate) use status::{StatusTracker, wait_any_final};
