//! The processor task: reads each incoming message in order, answers quick requests inline,
//! spawns a task per tool call, routes client replies to waiting tasks, and applies
//! cancellations.

use std::sync::Arc;

use keel_protocol::{
    INVALID_PARAMS, INVALID_REQUEST, JsonRpcErrorObject, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, METHOD_NOT_FOUND, MethodTable, RequestId,
};
use rmcp::model::{
    EmptyObject, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ProtocolVersion, ServerCapabilities,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::context::{CancelTarget, RunningCall, ServerContext};
use crate::methods::{
    MCP_LATEST_PROTOCOL_VERSION, MCP_SUPPORTED_PROTOCOL_VERSIONS, McpClientNotification,
    McpClientRequest,
};
use crate::streaming;
use crate::tools::{ToolCall, list_tools};
use crate::transport::Incoming;

/// The name Keel's MCP server reports in `serverInfo`.
pub const SERVER_NAME: &str = "keel-mcp-server";

/// Picks the protocol version: the client's when Keel speaks it, else Keel's latest.
pub fn negotiate_protocol_version(requested: &str) -> &'static str {
    MCP_SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .find(|supported| **supported == requested)
        .copied()
        .unwrap_or(MCP_LATEST_PROTOCOL_VERSION)
}

/// Who this server is, as `initialize` and `server/discover` report it.
pub(crate) fn server_info() -> Implementation {
    let mut info = Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION"));
    info.title = Some("Keel".to_string());
    info
}

/// rmcp's value for a revision Keel speaks.
fn protocol_version(version: &'static str) -> ProtocolVersion {
    match version {
        "2025-11-25" => ProtocolVersion::V_2025_11_25,
        "2025-03-26" => ProtocolVersion::V_2025_03_26,
        "2024-11-05" => ProtocolVersion::V_2024_11_05,
        _ => ProtocolVersion::V_2025_06_18,
    }
}

/// How long tool calls already running may take to answer once the client closed its input
/// (the MCP stdio shutdown sequence); after it they are aborted.
pub(crate) const INPUT_CLOSED_DRAIN: std::time::Duration = std::time::Duration::from_secs(30);

pub(crate) struct MessageProcessor {
    context: Arc<ServerContext>,
    initialized: bool,
    /// MCP 2026-07-28: each request states the client's capabilities in its `_meta`.
    stateless: bool,
    /// Tool-call tasks; dropping the processor aborts them (and so their conversations).
    calls: JoinSet<()>,
}

impl MessageProcessor {
    pub(crate) fn new(context: Arc<ServerContext>) -> Self {
        Self {
            context,
            initialized: false,
            stateless: false,
            calls: JoinSet::new(),
        }
    }

    /// A processor for MCP 2026-07-28's stateless requests: there is no handshake, and a call
    /// may ask approvals only of a client whose request declares `elicitation` (the HTTP
    /// layer turns the question into an `input_required` result).
    pub(crate) fn stateless(context: Arc<ServerContext>) -> Self {
        context.set_client_elicitation(false);
        Self {
            context,
            initialized: true,
            stateless: true,
            calls: JoinSet::new(),
        }
    }

    /// Processes messages until input ends or `shutdown` fires.
    pub(crate) async fn run(
        mut self,
        mut rx: mpsc::Receiver<Incoming>,
        shutdown: CancellationToken,
    ) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                incoming = rx.recv() => match incoming {
                    Some(incoming) => self.handle(incoming).await,
                    None => {
                        self.drain(&shutdown).await;
                        break;
                    }
                },
                Some(joined) = self.calls.join_next(), if !self.calls.is_empty() => {
                    if let Err(err) = joined && err.is_panic() {
                        tracing::error!(%err, "a tool call task panicked");
                    }
                }
            }
        }
        tracing::debug!(
            running = self.calls.len(),
            "processor stopping; aborting running calls"
        );
    }

    /// Lets running tool calls answer after the input ended, within [`INPUT_CLOSED_DRAIN`]
    /// and until `shutdown`.
    async fn drain(&mut self, shutdown: &CancellationToken) {
        let all_done = async { while self.calls.join_next().await.is_some() {} };
        tokio::select! {
            () = all_done => {}
            () = shutdown.cancelled() => {}
            () = tokio::time::sleep(INPUT_CLOSED_DRAIN) => {
                tracing::warn!("tool calls still running {INPUT_CLOSED_DRAIN:?} after the input closed; stopping them");
            }
        }
    }

    async fn handle(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Message(JsonRpcMessage::Request(request)) => {
                self.handle_request(request).await
            }
            Incoming::Message(JsonRpcMessage::Notification(notification)) => {
                self.handle_notification(notification).await;
            }
            Incoming::Message(JsonRpcMessage::Response(response)) => {
                if !self
                    .context
                    .outgoing
                    .route_reply(&response.id, Ok(response.result))
                {
                    tracing::warn!(id = %response.id, "response to no pending request");
                }
            }
            Incoming::Message(JsonRpcMessage::Error(error)) => match error.id {
                Some(id) => {
                    if !self.context.outgoing.route_reply(&id, Err(error.error)) {
                        tracing::warn!(%id, "error response to no pending request");
                    }
                }
                None => tracing::warn!(error = %error.error, "the client reported an error"),
            },
            Incoming::Malformed(bad) => {
                tracing::warn!(%bad, "malformed message");
                let response = bad.to_response();
                self.context
                    .outgoing
                    .send_error(response.id, response.error)
                    .await;
            }
        }
    }

    async fn handle_request(&mut self, request: JsonRpcRequest) {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        let outgoing = &self.context.outgoing;
        if !McpClientRequest::METHODS.contains(&method.as_str()) {
            let error = JsonRpcErrorObject::new(
                METHOD_NOT_FOUND,
                format!("method `{method}` is not supported by {SERVER_NAME}"),
            );
            return outgoing.send_error(Some(id), error).await;
        }
        let request = match McpClientRequest::from_method_and_params(&method, params) {
            Ok(request) => request,
            Err(err) => {
                let error = JsonRpcErrorObject::new(
                    INVALID_PARAMS,
                    format!("invalid params for `{method}`: {err}"),
                );
                return outgoing.send_error(Some(id), error).await;
            }
        };
        let allowed_now = self.initialized
            || matches!(
                request,
                McpClientRequest::Initialize(_) | McpClientRequest::Ping(_)
            );
        if !allowed_now {
            let error = JsonRpcErrorObject::new(
                INVALID_REQUEST,
                format!("`{method}` before `initialize`: the session must be initialized first"),
            );
            return outgoing.send_error(Some(id), error).await;
        }
        match request {
            McpClientRequest::Initialize(params) => self.initialize(id, params).await,
            McpClientRequest::Ping(_) => outgoing.send_response(id, &EmptyObject {}).await,
            McpClientRequest::ListTools(_) => outgoing.send_response(id, &list_tools()).await,
            McpClientRequest::CallTool(params) => {
                match ToolCall::parse(
                    &params.name,
                    params.arguments.map(serde_json::Value::Object),
                ) {
                    Ok(call) => {
                        let elicitation = if self.stateless {
                            params
                                .meta
                                .as_ref()
                                .and_then(|meta| meta.client_capabilities())
                                .is_some_and(|capabilities| capabilities.elicitation.is_some())
                        } else {
                            self.context.client_supports_elicitation()
                        };
                        // Tracked before the next message is read, so a cancellation that
                        // follows at once finds the call even if it has not started yet.
                        let tracked = self.context.track_call(id.clone());
                        let context = Arc::clone(&self.context);
                        self.calls.spawn(async move {
                            let result = call
                                .run(Arc::clone(&context), id.clone(), elicitation)
                                .await;
                            drop(tracked);
                            context.outgoing.send_response(id, &result).await;
                        });
                    }
                    Err(error) => outgoing.send_error(Some(id), error).await,
                }
            }
            // `resultType` belongs to a newer revision than Keel negotiates; left off the wire.
            McpClientRequest::ListResources(_) => {
                let empty = ListResourcesResult {
                    result_type: None,
                    ..ListResourcesResult::default()
                };
                outgoing.send_response(id, &empty).await;
            }
            McpClientRequest::ListResourceTemplates(_) => {
                let empty = ListResourceTemplatesResult {
                    result_type: None,
                    ..ListResourceTemplatesResult::default()
                };
                outgoing.send_response(id, &empty).await;
            }
            McpClientRequest::ListPrompts(_) => {
                let empty = ListPromptsResult {
                    result_type: None,
                    ..ListPromptsResult::default()
                };
                outgoing.send_response(id, &empty).await;
            }
            McpClientRequest::ReadResource(params) => {
                let mut error = JsonRpcErrorObject::new(
                    INVALID_PARAMS,
                    format!(
                        "resource `{}` not found: {SERVER_NAME} has no resources",
                        params.uri
                    ),
                );
                error.data = Some(serde_json::json!({ "uri": params.uri }));
                outgoing.send_error(Some(id), error).await;
            }
            McpClientRequest::SetLevel(_) => {
                // Logs go to stderr under RUST_LOG; accept the level so clients do not hang.
                tracing::debug!("logging/setLevel accepted (no-op)");
                outgoing.send_response(id, &EmptyObject {}).await;
            }
        }
    }

    async fn initialize(&mut self, id: RequestId, params: InitializeRequestParams) {
        if self.initialized {
            let error =
                JsonRpcErrorObject::new(INVALID_REQUEST, "the session is already initialized");
            return self.context.outgoing.send_error(Some(id), error).await;
        }
        self.initialized = true;
        let client = &params.client_info;
        let requested = params.protocol_version.to_string();
        tracing::info!(client = %client.name, version = %client.version, protocol = %requested, "initialize");
        self.context
            .set_client_elicitation(params.capabilities.elicitation.is_some());
        let mut capabilities = ServerCapabilities::default();
        let mut tools = rmcp::model::ToolsCapability::default();
        tools.list_changed = Some(false);
        capabilities.tools = Some(tools);
        let result = InitializeResult::new(capabilities)
            .with_server_info(server_info())
            .with_protocol_version(protocol_version(negotiate_protocol_version(&requested)));
        self.context.outgoing.send_response(id, &result).await;
    }

    async fn handle_notification(&mut self, notification: JsonRpcNotification) {
        let method = notification.method;
        if !McpClientNotification::METHODS.contains(&method.as_str()) {
            tracing::debug!(%method, "ignoring an unknown notification");
            return;
        }
        match McpClientNotification::from_method_and_params(&method, notification.params) {
            Ok(McpClientNotification::Initialized(_)) => tracing::debug!("client initialized"),
            Ok(McpClientNotification::Cancelled(params)) => match params
                .request_id
                .and_then(|id| serde_json::from_value(serde_json::to_value(id).ok()?).ok())
            {
                Some(request_id) => self.cancel(request_id).await,
                None => tracing::debug!("a cancellation without a request id; ignored"),
            },
            Err(err) => {
                tracing::warn!(%method, %err, "ignoring a notification with invalid params")
            }
        }
    }

    async fn cancel(&mut self, request_id: RequestId) {
        match self.context.cancel_call(&request_id) {
            CancelTarget::Running(RunningCall::Turn(conversation)) => {
                tracing::info!(%request_id, conversation = %conversation.id(), "interrupting the turn");
                if let Err(err) = conversation.submit(keel_protocol::Op::Interrupt).await {
                    tracing::debug!(%err, "cannot interrupt: the conversation has stopped");
                }
            }
            CancelTarget::Running(RunningCall::Stream(conversation_id)) => {
                streaming::cancel_stream(&self.context, conversation_id, &request_id).await;
            }
            CancelTarget::Deferred => {
                tracing::info!(%request_id, "cancelled while starting; the call stops once started");
            }
            CancelTarget::Unknown => tracing::debug!(%request_id, "cancel for no running call"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_versions_get_the_latest() {
        assert_eq!(negotiate_protocol_version("2025-03-26"), "2025-03-26");
        assert_eq!(
            negotiate_protocol_version("2099-01-01"),
            MCP_LATEST_PROTOCOL_VERSION
        );
    }
}
