//! The session as the tools see it.

use futures::future::BoxFuture;
use keel_protocol::{CallId, ConversationId, EventMsg, ReviewDecision, SubmissionId};
use tokio::sync::oneshot;

use super::Session;
use crate::agents::AgentControl;
use crate::models::ResponseItem;
use crate::processes::ProcessLayer;
use crate::shell_snapshot::ShellSnapshots;
use crate::tools::ToolHost;
use crate::unified_exec::UnifiedExecSessions;

impl ToolHost for Session {
    fn rollout_path(&self) -> Option<std::path::PathBuf> {
        Session::rollout_path(self)
    }

    fn id(&self) -> ConversationId {
        Session::id(self)
    }

    fn send_event<'a>(&'a self, sub_id: &'a SubmissionId, msg: EventMsg) -> BoxFuture<'a, ()> {
        Box::pin(Session::send_event(self, sub_id, msg))
    }

    fn history(&self) -> Vec<ResponseItem> {
        Session::history(self)
    }

    fn queue_input(&self, item: ResponseItem) {
        Session::queue_input(self, item);
    }

    fn goals(&self) -> &crate::goals::Goals {
        Session::goals(self)
    }

    fn is_approved_for_session(&self, argv: &[String]) -> bool {
        Session::is_approved_for_session(self, argv)
    }

    fn approve_for_session(&self, argv: Vec<String>) {
        Session::approve_for_session(self, argv);
    }

    fn register_approval(&self, call_id: CallId) -> oneshot::Receiver<ReviewDecision> {
        self.approvals.register(call_id)
    }

    fn forget_approval(&self, call_id: &CallId) {
        self.approvals.forget(call_id);
    }

    fn register_user_input(
        &self,
        call_id: CallId,
    ) -> oneshot::Receiver<keel_protocol::UserInputResponse> {
        self.user_inputs.register(call_id)
    }

    fn forget_user_input(&self, call_id: &CallId) {
        self.user_inputs.forget(call_id);
    }

    fn register_dynamic_call(
        &self,
        call_id: CallId,
    ) -> oneshot::Receiver<keel_protocol::DynamicToolResponse> {
        self.dynamic_calls.register(call_id)
    }

    fn forget_dynamic_call(&self, call_id: &CallId) {
        self.dynamic_calls.forget(call_id);
    }

    #[cfg(feature = "mcp")]
    fn register_elicitation(
        &self,
        server: &str,
        request_id: &serde_json::Value,
    ) -> oneshot::Receiver<rmcp::model::ElicitResult> {
        self.elicitations
            .register(super::elicitation_key(server, request_id))
    }

    #[cfg(feature = "mcp")]
    fn mcp_servers(&self) -> std::sync::Arc<crate::mcp::McpServers> {
        Session::mcp(self)
    }

    fn input_arrived(&self) -> BoxFuture<'_, ()> {
        Session::input_arrived(self)
    }

    fn agents(&self) -> &AgentControl {
        Session::agents(self)
    }

    fn processes(&self) -> &ProcessLayer {
        Session::processes(self)
    }

    fn unified_exec(&self) -> &UnifiedExecSessions {
        Session::unified_exec(self)
    }

    fn shell_snapshots(&self) -> &ShellSnapshots {
        Session::shell_snapshots(self)
    }
}
