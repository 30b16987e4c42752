//! `tools/call` results as rmcp's `CallToolResult`, in the shape Keel has always answered:
//! one text block, the structured result when there is one, `isError` on failure.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// A successful result: the text for the client's model and the same result as an object
/// matching the tool's output schema.
pub(crate) fn success(text: impl Into<String>, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text.into())]);
    result.structured_content = Some(structured);
    result.is_error = None;
    // `resultType` belongs to a newer revision than Keel negotiates; leave it off the wire.
    result.result_type = None;
    result
}

/// A failed result whose text says what went wrong (a tool failure is a result the client's
/// model can read, not a JSON-RPC error).
pub(crate) fn error(message: impl Into<String>) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.into())]);
    result.result_type = None;
    result
}

/// A result with text only: neither structured nor an error.
pub(crate) fn text(text: impl Into<String>) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text.into())]);
    result.is_error = None;
    result.result_type = None;
    result
}
