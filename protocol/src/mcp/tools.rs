//! Tool listing and calling: `tools/list` and `tools/call`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name `tools/call` uses.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the client's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of `arguments`.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` in a successful result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// Every tool.
    pub tools: Vec<Tool>,
    /// Present when more tools follow (never, for Keel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// Its arguments, checked against the tool's input schema by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// One piece of a tool result's content; Keel only produces text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
}

/// Result of `tools/call`. A failure of the tool itself is a result with `isError: true`,
/// not a JSON-RPC error, so the client's model can read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Human- and model-readable content.
    pub content: Vec<ContentBlock>,
    /// The same result as an object matching the tool's output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `true` when the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl CallToolResult {
    /// A successful result with one text block and structured content.
    pub fn success(text: impl Into<String>, structured_content: Value) -> Self {
        Self {
            content: vec![ContentBlock::Text { text: text.into() }],
            structured_content: Some(structured_content),
            is_error: None,
        }
    }

    /// A failed result whose text says what went wrong.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::Text {
                text: message.into(),
            }],
            structured_content: None,
            is_error: Some(true),
        }
    }
}
