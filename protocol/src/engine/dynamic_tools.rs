//! Tools a client defines and runs itself ("dynamic tools", Codex 0.169's `dynamicTools`):
//! their definitions, the engine asking the client to run one, and the client's answer.
//! The field names are camelCase, as on the app-server wire, so one type serves both.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{CallId, TurnId};

/// A tool, or a namespace of tools, that the client runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolSpec {
    /// One function the model may call.
    #[serde(rename_all = "camelCase")]
    Function {
        /// The name the model calls it by.
        name: String,
        /// What it does, for the model.
        description: String,
        /// The JSON Schema of its arguments.
        input_schema: serde_json::Value,
        /// Codex's hint to load the tool only when needed; Keel offers every tool at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        defer_loading: Option<bool>,
    },
    /// Functions grouped under a name; the model calls each as `NAMESPACE__TOOL`.
    #[serde(rename_all = "camelCase")]
    Namespace {
        /// The namespace.
        name: String,
        /// What the group is for.
        description: String,
        /// Its functions.
        tools: Vec<DynamicToolNamespaceTool>,
    },
}

/// A function inside a [`DynamicToolSpec::Namespace`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolNamespaceTool {
    /// One function.
    #[serde(rename_all = "camelCase")]
    Function {
        /// Its name within the namespace.
        name: String,
        /// What it does, for the model.
        description: String,
        /// The JSON Schema of its arguments.
        input_schema: serde_json::Value,
        /// Codex's hint to load the tool only when needed; Keel offers every tool at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        defer_loading: Option<bool>,
    },
}

/// One piece of a dynamic tool's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolContentItem {
    /// Text for the model.
    #[serde(rename_all = "camelCase")]
    InputText {
        /// The text.
        text: String,
    },
    /// An image for the model, as a URL (a `data:` URL works).
    #[serde(rename_all = "camelCase")]
    InputImage {
        /// The image.
        image_url: String,
    },
    /// Audio, as a URL (Keel tells the model it was left out).
    #[serde(rename_all = "camelCase")]
    InputAudio {
        /// The audio.
        audio_url: String,
    },
}

/// The client's answer to a dynamic tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolResponse {
    /// The output for the model.
    pub content_items: Vec<DynamicToolContentItem>,
    /// Whether the call did what it was asked.
    pub success: bool,
}

impl DynamicToolResponse {
    /// A failed call whose output is `message`: what the model reads when no client ran it.
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            content_items: vec![DynamicToolContentItem::InputText {
                text: message.into(),
            }],
            success: false,
        }
    }
}

/// Payload of `dynamic_tool_call_request`: the model called a client's tool. Answer with
/// `Op::DynamicToolResponse { id: call_id, .. }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DynamicToolCallRequestEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// The tool's name (within its namespace, if it has one).
    pub tool: String,
    /// The tool's namespace, if it was defined in one.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The arguments the model sent (a JSON object, or the text when it was not JSON).
    pub arguments: serde_json::Value,
}

/// Payload of `dynamic_tool_call_end`: a client's tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DynamicToolCallEndEvent {
    /// The model's call id.
    pub call_id: CallId,
    /// The turn it belongs to.
    pub turn_id: TurnId,
    /// The tool's name (within its namespace, if it has one).
    pub tool: String,
    /// The tool's namespace, if it was defined in one.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The arguments the model sent.
    pub arguments: serde_json::Value,
    /// What the client answered (or the failure the engine recorded for it).
    pub response: DynamicToolResponse,
    /// How long the call took.
    pub duration: Duration,
}
