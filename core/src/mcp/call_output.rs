//! An MCP tool's result as the client sees it (every block unchanged) and as the model sees
//! it (text, with images attached to the next request).

use base64::Engine;
use keel_protocol::McpToolResult;
use rmcp::model::CallToolResult;
use serde_json::Value;

/// The result as JSON blocks for events and app-server items.
pub(crate) fn client_result(result: &CallToolResult) -> McpToolResult {
    McpToolResult {
        content: result
            .content
            .iter()
            .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
            .collect(),
        structured_content: result.structured_content.clone(),
        is_error: result.is_error,
    }
}

/// What the model is given: the text blocks in order, images as `data:` URLs to attach,
/// other blocks described in a line, and the structured result when there is no text.
pub(crate) struct ModelOutput {
    /// The function call output.
    pub text: String,
    /// Images to show the model with its next request.
    pub image_urls: Vec<String>,
}

/// Builds the model's view of `result`.
pub(crate) fn model_output(result: &McpToolResult) -> ModelOutput {
    let mut parts = Vec::new();
    let mut image_urls = Vec::new();
    let mut any_text = false;
    for block in &result.content {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => {
                any_text = true;
                parts.push(field("text").to_string());
            }
            "image" => {
                let mime = field("mimeType");
                let data = field("data");
                let decodable = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .is_ok();
                if decodable && mime.starts_with("image/") {
                    image_urls.push(format!("data:{mime};base64,{data}"));
                    parts.push(format!("[image {mime} attached]"));
                } else {
                    parts.push(format!("[image {mime} that could not be decoded]"));
                }
            }
            "audio" => parts.push(format!(
                "[audio {} of {} base64 characters, not shown]",
                field("mimeType"),
                field("data").len()
            )),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => {
                        any_text = true;
                        parts.push(format!("[resource {uri}]\n{text}"));
                    }
                    None => parts.push(format!("[binary resource {uri}, not shown]")),
                }
            }
            "resource_link" => parts.push(format!(
                "[resource link {} ({})]",
                field("uri"),
                field("name")
            )),
            other => parts.push(format!("[{other} block]")),
        }
    }
    if !any_text && let Some(structured) = &result.structured_content {
        parts.push(structured.to_string());
    }
    let mut text = parts.join("\n");
    if result.is_error == Some(true) {
        text = format!("The tool reported an error:\n{text}");
    }
    ModelOutput { text, image_urls }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_images_and_structured_results_reach_the_model() {
        let result = McpToolResult {
            content: vec![
                json!({"type": "text", "text": "sum is 5"}),
                json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
                json!({"type": "resource_link", "uri": "test://static/resource/1", "name": "r1"}),
            ],
            structured_content: Some(json!({"result": 5})),
            is_error: None,
        };
        let output = model_output(&result);
        assert_eq!(
            output.text,
            "sum is 5\n[image image/png attached]\n[resource link test://static/resource/1 (r1)]"
        );
        assert_eq!(output.image_urls, ["data:image/png;base64,iVBORw0KGgo="]);

        let structured_only = McpToolResult {
            content: Vec::new(),
            structured_content: Some(json!({"temperature": 21})),
            is_error: Some(true),
        };
        assert_eq!(
            model_output(&structured_only).text,
            "The tool reported an error:\n{\"temperature\":21}"
        );
    }
}
