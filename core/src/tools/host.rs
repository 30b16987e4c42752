//! What a built-in tool may use of the conversation it runs in. The session implements it;
//! defining it here, below the session, is what keeps the tools from importing the session.

use futures::future::BoxFuture;
use keel_protocol::{CallId, ConversationId, EventMsg, ReviewDecision, SubmissionId};
use tokio::sync::oneshot;

use crate::agents::AgentControl;
use crate::models::ResponseItem;
use crate::processes::ProcessLayer;
use crate::shell_snapshot::ShellSnapshots;
use crate::unified_exec::UnifiedExecSessions;

/// The conversation a tool call runs in: its events, pending questions, processes and agents.
pub(crate) trait ToolHost: Send + Sync {
    /// The conversation's id.
    fn id(&self) -> ConversationId;

    /// The conversation's rollout file, when it is recorded (hooks are told it).
    fn rollout_path(&self) -> Option<std::path::PathBuf>;

    /// Sends an event to the conversation's client (and its rollout when it is part of the
    /// transcript); waits while the client is slow.
    fn send_event<'a>(&'a self, sub_id: &'a SubmissionId, msg: EventMsg) -> BoxFuture<'a, ()>;

    /// The model-facing history so far.
    fn history(&self) -> Vec<ResponseItem>;

    /// Adds an item to the next request of the running turn (an image a tool attached).
    fn queue_input(&self, item: ResponseItem);

    /// The thread's goal.
    fn goals(&self) -> &crate::goals::Goals;

    /// Whether the user approved this exact command for the rest of the conversation.
    fn is_approved_for_session(&self, argv: &[String]) -> bool;

    /// Remembers a command the user approved for the rest of the conversation.
    fn approve_for_session(&self, argv: Vec<String>);

    /// Registers a pending approval; the client's decision arrives on the receiver.
    fn register_approval(&self, call_id: CallId) -> oneshot::Receiver<ReviewDecision>;

    /// Forgets an approval that will not be answered (an interrupt).
    fn forget_approval(&self, call_id: &CallId);

    /// Registers a pending `request_user_input`; the answers arrive on the receiver.
    fn register_user_input(
        &self,
        call_id: CallId,
    ) -> oneshot::Receiver<keel_protocol::UserInputResponse>;

    /// Forgets a `request_user_input` that ended without answers.
    fn forget_user_input(&self, call_id: &CallId);

    /// Registers a pending call of a client's tool; its answer arrives on the receiver.
    fn register_dynamic_call(
        &self,
        call_id: CallId,
    ) -> oneshot::Receiver<keel_protocol::DynamicToolResponse>;

    /// Forgets a client's tool call that will not be answered (an interrupt).
    fn forget_dynamic_call(&self, call_id: &CallId);

    /// Registers a question an MCP server asked; the user's answer arrives on the receiver.
    #[cfg(feature = "mcp")]
    fn register_elicitation(
        &self,
        server: &str,
        request_id: &serde_json::Value,
    ) -> oneshot::Receiver<rmcp::model::ElicitResult>;

    /// The conversation's MCP servers (for their resources).
    #[cfg(feature = "mcp")]
    fn mcp_servers(&self) -> std::sync::Arc<crate::mcp::McpServers>;

    /// Resolves once input from outside (a steer, another agent's message) joins the running
    /// turn after this call (the waiter is registered by the call, so take it before
    /// announcing a wait).
    fn input_arrived(&self) -> BoxFuture<'_, ()>;

    /// The sub-agents of this conversation.
    fn agents(&self) -> &AgentControl;

    /// Where the conversation's commands run.
    fn processes(&self) -> &ProcessLayer;

    /// The model's live `exec_command` sessions.
    fn unified_exec(&self) -> &UnifiedExecSessions;

    /// Captured login environments, replayed instead of running the profile per command.
    fn shell_snapshots(&self) -> &ShellSnapshots;
}
