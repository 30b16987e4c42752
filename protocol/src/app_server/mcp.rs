//! App-server messages about external MCP servers: their tool-call items, progress, start-up
//! status, their questions for the user (elicitation) and `mcpServerStatus/list`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where an `mcpToolCall` item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpToolCallStatus {
    /// Running (or waiting for approval).
    InProgress,
    /// The server answered (possibly with `isError`).
    Completed,
    /// Declined, timed out, cancelled, or the server failed.
    Failed,
}

/// A tool's answer in an `mcpToolCall` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallResult {
    /// The content blocks, as the server sent them.
    pub content: Vec<Value>,
    /// The structured result, when the tool declares one.
    #[serde(default)]
    pub structured_content: Option<Value>,
}

/// Why an `mcpToolCall` item has no result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallError {
    /// What went wrong.
    pub message: String,
}

/// The fields of an `mcpToolCall` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallItem {
    /// Item id (the model's call id).
    pub id: String,
    /// The server's configured name.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// Progress.
    pub status: McpToolCallStatus,
    /// The arguments the model passed.
    pub arguments: Value,
    /// The answer, once completed.
    #[serde(default)]
    pub result: Option<McpToolCallResult>,
    /// Why there is no answer, once failed.
    #[serde(default)]
    pub error: Option<McpToolCallError>,
    /// How long the call took, once ended.
    #[serde(default)]
    pub duration_ms: Option<i64>,
    /// The environment the MCP server runs in (Codex 0.171; Keel's run where the server
    /// does: `local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
}

/// Params of `item/mcpToolCall/progress`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallProgressNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `mcpToolCall` item.
    pub item_id: String,
    /// The server's progress message.
    pub message: String,
}

/// A server's start-up state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerStartupState {
    /// Being started.
    Starting,
    /// Started; its tools are offered.
    Ready,
    /// Could not start.
    Failed,
    /// Its start was abandoned.
    Cancelled,
}

/// Params of `mcpServer/startupStatus/updated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatusUpdatedNotification {
    /// The server's configured name.
    pub name: String,
    /// Its new state.
    pub status: McpServerStartupState,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The thread whose start started it.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// The environment the MCP server runs in (Codex 0.171; Keel's run where the server
    /// does: `local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
}

/// Params of `mcpServer/elicitation/request`: an MCP server asks the user for input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestParams {
    /// The thread whose tool call the server was serving.
    pub thread_id: String,
    /// The turn, when known.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The server asking.
    pub server_name: String,
    /// Always `form`: Keel forwards form elicitations (URL ones are declined).
    pub mode: String,
    /// What the server asks.
    pub message: String,
    /// The answer's shape (a flat JSON Schema object).
    pub requested_schema: Value,
    /// The environment the MCP server runs in (Codex 0.171; Keel's run where the server
    /// does: `local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
}

/// The user's choice on an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerElicitationAction {
    /// Answered with `content`.
    Accept,
    /// Refused.
    Decline,
    /// Dismissed.
    Cancel,
}

/// Result of `mcpServer/elicitation/request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerElicitationRequestResponse {
    /// The choice.
    pub action: McpServerElicitationAction,
    /// The answer, for `accept`.
    #[serde(default)]
    pub content: Option<Value>,
}

/// Params of `mcpServerStatus/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListMcpServerStatusParams {
    /// Where a previous page ended.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Params of `mcpServer/resource/read` (Codex 0.171): one resource of a configured server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpResourceReadParams {
    /// The server, by its configured name.
    pub server: String,
    /// The resource's URI.
    pub uri: String,
    /// The thread asking (Keel reads from the server's configuration either way).
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// Response of `mcpServer/resource/read`: what the server returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpResourceReadResponse {
    /// The resource's contents (`{uri, mimeType?, text}` or `{uri, mimeType?, blob}`).
    pub contents: Vec<serde_json::Value>,
}

/// Params of `mcpServer/tool/call` (Codex 0.171): a client calls a server's tool itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerToolCallParams {
    /// The thread the call is made for (it must be loaded).
    pub thread_id: String,
    /// The server, by its configured name.
    pub server: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// The tool's arguments (an object).
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

/// Response of `mcpServer/tool/call`: the server's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerToolCallResponse {
    /// The result's content blocks, as the server sent them.
    pub content: Vec<serde_json::Value>,
    /// Whether the server reports the call as failed.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// The structured result, when the server gave one.
    #[serde(default)]
    pub structured_content: Option<serde_json::Value>,
}

/// How a server authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpAuthStatus {
    /// No authentication (stdio servers).
    Unsupported,
    /// The server asks for OAuth and no login is stored (`keel mcp login NAME`).
    NotLoggedIn,
    /// A bearer token from the environment.
    BearerToken,
    /// An OAuth login is stored for it.
    OAuth,
}

/// One configured server in `mcpServerStatus/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerStatus {
    /// The server's configured name.
    pub name: String,
    /// How it authenticates.
    pub auth_status: McpAuthStatus,
    /// Its tools by name, as it lists them.
    pub tools: BTreeMap<String, Value>,
    /// Its resources, as it lists them (empty when it offers none).
    pub resources: Vec<Value>,
    /// Its resource templates, as it lists them.
    pub resource_templates: Vec<Value>,
    /// Whether it is connected (Codex 0.169's field).
    #[serde(default)]
    pub runtime_status: Option<McpServerConnectionStatus>,
    /// Why its tools could not be listed: it did not start (Codex 0.169's field).
    #[serde(default)]
    pub tools_error: Option<String>,
    /// The environment the MCP server runs in (Codex 0.171; Keel's run where the server
    /// does: `local`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    /// The installed plugin that brought it (`PLUGIN@MARKETPLACE`; Codex 0.171).
    #[serde(default)]
    pub plugin_id: Option<String>,
}

/// A server's connection state in `mcpServerStatus/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum McpServerConnectionStatus {
    /// Not started yet.
    NotStarted,
    /// Starting.
    Starting,
    /// Started; its tools are listed.
    Connected,
    /// It needs a login Keel cannot do.
    AuthenticationRequired,
    /// It could not start.
    Failed,
    /// Its start was abandoned.
    Cancelled,
    /// `enabled = false` in the configuration.
    Disabled,
}

/// Result of `mcpServerStatus/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListMcpServerStatusResponse {
    /// The servers, by name.
    pub data: Vec<McpServerStatus>,
    /// Where the next page starts, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
}
