//! What the engine reports about external MCP servers: their start-up, the tool calls the
//! model makes on them, and the questions (elicitations) they ask the user.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::CallId;

/// Which tool of which server a call ran, and with what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpInvocation {
    /// The server's name in `[mcp_servers.NAME]`.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
    /// The arguments the model passed.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// Payload of `mcp_tool_call_begin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallBeginEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// What is being called.
    pub invocation: McpInvocation,
}

/// A tool's answer as the MCP server sent it (`CallToolResult`), kept as JSON so clients see
/// every content block unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolResult {
    /// Text, image, audio, resource and resource-link blocks.
    #[serde(default)]
    pub content: Vec<Value>,
    /// The tool's structured result, when it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reports that it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

/// Payload of `mcp_tool_call_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallEndEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// What was called.
    pub invocation: McpInvocation,
    /// How long the call took.
    pub duration: Duration,
    /// The tool's answer (`Ok`), or why there is none (`Err`: declined, timed out, the
    /// server failed).
    pub result: Result<McpToolResult, String>,
}

/// Payload of `mcp_tool_call_progress`: a progress notification the server sent for a
/// running call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpToolCallProgressEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// The server's message, or the progress as `progress/total`.
    pub message: String,
    /// Progress so far, in the server's units.
    pub progress: f64,
    /// The total, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
}

/// Where a server is in starting up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpStartupStatus {
    /// Being started (or connected to).
    Starting,
    /// Initialised and its tools listed.
    Ready,
    /// Could not start, timed out, or exited.
    Failed {
        /// Why, in words.
        error: String,
    },
}

/// Payload of `mcp_startup_update`: one server changed state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpStartupUpdateEvent {
    /// The server's name.
    pub server: String,
    /// Its new state.
    pub status: McpStartupStatus,
}

/// A server that could not start, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpStartupFailure {
    /// The server's name.
    pub server: String,
    /// Why it failed.
    pub error: String,
}

/// Payload of `mcp_startup_complete`: every configured server has started or failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpStartupCompleteEvent {
    /// Servers whose tools are offered.
    pub ready: Vec<String>,
    /// Servers that failed.
    pub failed: Vec<McpStartupFailure>,
    /// Servers whose start was abandoned (the conversation ended first).
    #[serde(default)]
    pub cancelled: Vec<String>,
}

/// Payload of `elicitation_request`: an MCP server asks the user for input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ElicitationRequestEvent {
    /// The server asking.
    pub server_name: String,
    /// Answer with `Op::ResolveElicitation { request_id: id, .. }`.
    pub id: Value,
    /// What the server asks, shown to the user.
    pub message: String,
    /// The shape of the answer (a flat JSON Schema object), when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    /// Answered; the content goes back to the server.
    Accept,
    /// Refused.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}
