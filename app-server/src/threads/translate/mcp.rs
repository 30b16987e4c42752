//! External MCP servers in a thread: tool calls as `mcpToolCall` items with
//! `item/mcpToolCall/progress`, start-up as `mcpServer/startupStatus/updated`, and a server's
//! question as an `mcpServer/elicitation/request` to the clients.

use keel_protocol::app_server::{
    McpServerElicitationRequestParams, McpServerStartupState, McpServerStatusUpdatedNotification,
    McpToolCallProgressNotification, ServerNotification, ServerRequest,
};
use keel_protocol::{EventMsg, McpStartupStatus};

use super::{Output, Translator};
use crate::threads::items::{mcp_item_ended, mcp_item_started};

impl Translator {
    /// Maps an MCP event; other events give nothing.
    pub(super) fn mcp(&mut self, msg: &EventMsg) -> Vec<Output> {
        let thread_id = self.thread_id.clone();
        match msg {
            EventMsg::McpToolCallBegin(begin) => self.start_once(mcp_item_started(begin)),
            EventMsg::McpToolCallEnd(end) => self.complete(mcp_item_ended(end)),
            EventMsg::McpToolCallProgress(progress) => {
                let Some(turn_id) = self.active_turn_id().map(str::to_string) else {
                    return Vec::new();
                };
                vec![Output::notify(ServerNotification::McpToolCallProgress(
                    McpToolCallProgressNotification {
                        thread_id,
                        turn_id,
                        item_id: progress.call_id.to_string(),
                        message: progress.message.clone(),
                    },
                ))]
            }
            EventMsg::McpStartupUpdate(update) => {
                let (status, error) = match &update.status {
                    McpStartupStatus::Starting => (McpServerStartupState::Starting, None),
                    McpStartupStatus::Ready => (McpServerStartupState::Ready, None),
                    McpStartupStatus::Failed { error } => {
                        (McpServerStartupState::Failed, Some(error.clone()))
                    }
                };
                vec![Output::notify(ServerNotification::McpServerStatusUpdated(
                    McpServerStatusUpdatedNotification {
                        name: update.server.clone(),
                        status,
                        error,
                        thread_id: Some(thread_id),
                        environment_id: Some(keel_core::config::LOCAL_ENVIRONMENT.to_string()),
                    },
                ))]
            }
            EventMsg::ElicitationRequest(request) => vec![Output::Elicitation {
                server_name: request.server_name.clone(),
                request_id: request.id.clone(),
                request: ServerRequest::McpServerElicitation(McpServerElicitationRequestParams {
                    thread_id,
                    turn_id: self.active_turn_id().map(str::to_string),
                    server_name: request.server_name.clone(),
                    mode: "form".to_string(),
                    message: request.message.clone(),
                    requested_schema: request
                        .requested_schema
                        .clone()
                        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
                    environment_id: Some(keel_core::config::LOCAL_ENVIRONMENT.to_string()),
                }),
            }],
            _ => Vec::new(),
        }
    }
}
