//! What the agent tree needs from whoever owns the conversations (the conversation manager):
//! a seam that lets agents start and find conversations without depending on the manager.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use keel_protocol::ConversationId;

use super::Lineage;
use crate::config::Config;
use crate::conversation::Conversation;
use crate::conversation::NewConversation;
use crate::error::Result;
use crate::models::ResponseItem;

/// Starts, finds and forgets conversations for the agent tree.
pub(crate) trait ConversationHost: Send + Sync {
    /// The live conversation with `id`, if this process has one open.
    fn get(&self, id: ConversationId) -> Option<Arc<Conversation>>;

    /// Forgets a conversation (it shuts down once its last handle is dropped).
    fn remove(&self, id: ConversationId) -> Option<Arc<Conversation>>;

    /// Starts a conversation an agent asked for, and announces it to the embedder.
    fn spawn_child(
        self: Arc<Self>,
        config: Config,
        history: Vec<ResponseItem>,
        ephemeral: bool,
        lineage: Lineage,
    ) -> BoxFuture<'static, Result<NewConversation>>;

    /// Resumes a recorded conversation with the lineage it gets in this process.
    fn resume_conversation<'a>(
        self: Arc<Self>,
        config: Config,
        rollout_path: &'a Path,
        lineage: Lineage,
    ) -> BoxFuture<'a, Result<NewConversation>>;
}
