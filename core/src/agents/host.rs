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

    /// Resumes recorded conversation `id` with the lineage it gets in this process, from the
    /// host's rollout store (`known_file`: where a file store already found it); `None` when
    /// no record of it exists.
    fn resume_conversation<'a>(
        self: Arc<Self>,
        config: Config,
        id: ConversationId,
        known_file: Option<&'a Path>,
        lineage: Lineage,
    ) -> BoxFuture<'a, Result<Option<NewConversation>>>;
}
