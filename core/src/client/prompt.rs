//! What is sent to the model for one sampling request.

use serde_json::Value;

use super::RequestMetadata;
use crate::models::ResponseItem;

/// The complete input of one model request.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    /// System-level instructions.
    pub instructions: String,
    /// The conversation so far, oldest first.
    pub input: Vec<ResponseItem>,
    /// Tool definitions in Responses API form (`{"type":"function",...}` or `{"type":"custom",...}`).
    pub tools: Vec<Value>,
    /// The conversation the request belongs to: sent as `prompt_cache_key` and the
    /// `session_id` header, so the provider can reuse its cache of the shared prefix.
    pub conversation_id: Option<String>,
    /// The JSON Schema the final answer must match, sent as the response format.
    pub output_schema: Option<Value>,
    /// Who the request is for (installation, thread, turn, window), told to a Responses
    /// provider as Codex tells it; `None` sends none of it.
    pub metadata: Option<RequestMetadata>,
}
