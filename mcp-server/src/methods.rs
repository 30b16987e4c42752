//! The MCP methods keel-mcp-server answers and sends, with rmcp's model types for everything
//! the specification defines, and Keel's own types (from `keel_protocol::mcp`) for the Codex
//! extensions: `codex/event`, `initial_state` and approval elicitations with `codex_*` fields.

#![allow(
    deprecated,
    reason = "`logging/setLevel` is deprecated by a newer MCP revision but clients of 2025-06-18 send it"
)]

use keel_protocol::mcp::{
    CodexEventNotificationParams, ElicitRequestParams, ElicitResult, InitialStateNotificationParams,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, EmptyObject,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResult, SetLevelRequestParams,
};

/// The newest MCP revision Keel speaks; offered when a client asks for one Keel does not know.
pub const MCP_LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every MCP revision Keel accepts, newest first.
pub const MCP_SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revision, spoken only over Streamable HTTP (no `initialize`; every request
/// names its version).
pub const MCP_STATELESS_PROTOCOL_VERSION: &str = "2026-07-28";

keel_protocol::request_table! {
    /// Every request an MCP client may send to Keel's MCP server.
    pub enum McpClientRequest in mcp_client_request {
        /// Opens the session and negotiates the protocol version.
        Initialize("initialize", InitializeRequestParams) -> InitializeResult,
        /// Liveness check; allowed at any time.
        Ping("ping", EmptyObject) -> EmptyObject,
        /// Lists the tools.
        ListTools("tools/list", PaginatedRequestParams) -> ListToolsResult,
        /// Calls a tool.
        CallTool("tools/call", CallToolRequestParams) -> CallToolResult,
        /// Lists resources (Keel has none).
        ListResources("resources/list", PaginatedRequestParams) -> ListResourcesResult,
        /// Lists resource templates (Keel has none).
        ListResourceTemplates("resources/templates/list", PaginatedRequestParams) -> ListResourceTemplatesResult,
        /// Reads a resource (Keel has none, so every read is "not found").
        ReadResource("resources/read", ReadResourceRequestParams) -> ReadResourceResult,
        /// Lists prompts (Keel has none).
        ListPrompts("prompts/list", PaginatedRequestParams) -> ListPromptsResult,
        /// Sets the log level of `notifications/message` (Keel logs to stderr only).
        SetLevel("logging/setLevel", SetLevelRequestParams) -> EmptyObject,
    }
}

keel_protocol::notification_table! {
    /// Every notification an MCP client may send to Keel's MCP server.
    pub enum McpClientNotification in mcp_client_notification {
        /// The client finished the handshake.
        Initialized("notifications/initialized", EmptyObject),
        /// The client no longer wants the result of a request.
        Cancelled("notifications/cancelled", CancelledNotificationParam),
    }
}

keel_protocol::request_table! {
    /// Every request Keel's MCP server sends to its client.
    pub enum McpServerRequest in mcp_server_request {
        /// Asks the user to approve a command or a patch.
        Elicit("elicitation/create", ElicitRequestParams) -> ElicitResult,
    }
}

keel_protocol::notification_table! {
    /// Every notification Keel's MCP server sends to its client.
    pub enum McpServerNotification in mcp_server_notification {
        /// One engine event of a running tool call or a streamed conversation.
        CodexEvent("codex/event", CodexEventNotificationParams),
        /// The events buffered while nobody streamed a conversation.
        InitialState("initial_state", InitialStateNotificationParams),
        /// The server no longer needs the answer to one of its requests (an elicitation
        /// whose tool call ended), so the client can dismiss it.
        Cancelled("notifications/cancelled", CancelledNotificationParam),
    }
}
