//! The subset of the Model Context Protocol (revision 2025-06-18) that Keel's MCP server
//! speaks, plus the Codex extensions clients of such a server rely on: the `codex` and
//! `codex-reply` tool arguments, `codex/event` notifications, approval elicitations and the
//! conversation streaming tools. camelCase on the wire except where Codex fixed other names
//! (kebab-case tool arguments, `codex_*` elicitation fields); JSON-RPC **with** the `jsonrpc`
//! member.

mod codex_tools;
mod conversation_tools;
mod elicitation;
mod lifecycle;
mod tools;

pub use codex_tools::*;
pub use conversation_tools::*;
pub use elicitation::*;
pub use lifecycle::*;
pub use tools::*;

/// The newest MCP revision Keel speaks; offered when a client asks for one Keel does not know.
pub const MCP_LATEST_PROTOCOL_VERSION: &str = "2025-06-18";

/// Every MCP revision Keel accepts, newest first.
pub const MCP_SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

crate::request_table! {
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
        /// Lists prompts (Keel has none).
        ListPrompts("prompts/list", PaginatedRequestParams) -> ListPromptsResult,
        /// Sets the log level of `notifications/message` (Keel logs to stderr only).
        SetLevel("logging/setLevel", SetLevelRequestParams) -> EmptyObject,
    }
}

crate::notification_table! {
    /// Every notification an MCP client may send to Keel's MCP server.
    pub enum McpClientNotification in mcp_client_notification {
        /// The client finished the handshake.
        Initialized("notifications/initialized", EmptyObject),
        /// The client no longer wants the result of a request.
        Cancelled("notifications/cancelled", CancelledNotificationParams),
    }
}

crate::request_table! {
    /// Every request Keel's MCP server sends to its client.
    pub enum McpServerRequest in mcp_server_request {
        /// Asks the user to approve a command or a patch.
        Elicit("elicitation/create", ElicitRequestParams) -> ElicitResult,
    }
}

crate::notification_table! {
    /// Every notification Keel's MCP server sends to its client.
    pub enum McpServerNotification in mcp_server_notification {
        /// One engine event of a running tool call or a streamed conversation.
        CodexEvent("codex/event", CodexEventNotificationParams),
        /// The events buffered while nobody streamed a conversation.
        InitialState("initial_state", InitialStateNotificationParams),
        /// The server no longer needs the answer to one of its requests (an elicitation
        /// whose tool call ended), so the client can dismiss it.
        Cancelled("notifications/cancelled", CancelledNotificationParams),
    }
}
