//! Event payloads about calls of tools the embedding program registered in code (not Keel's
//! own, not an MCP server's, not the client's): clients show them like any other tool call.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CallId, TurnId};

/// Payload of `tool_call_begin`: the model called a tool of the embedding program.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallBeginEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// The tool's name.
    pub tool: String,
    /// The arguments the model sent (a JSON object, or the text when it was not JSON).
    pub arguments: serde_json::Value,
}

/// Payload of `tool_call_end`: a call of the embedding program's tool ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallEndEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// The tool's name.
    pub tool: String,
    /// The arguments the model sent.
    pub arguments: serde_json::Value,
    /// What the model reads as the call's output (or why the call failed).
    pub output: String,
    /// Whether the tool did what it was asked.
    pub success: bool,
    /// How long the call took.
    pub duration: Duration,
}
