//! Small local models often write a tool call as text instead of making it: a Hermes-style
//! `<tool_call>{"name": …, "arguments": …}</tool_call>` block, or an answer that is nothing but
//! such a JSON object (perhaps in a ```json fence). On the Chat wire such an answer, when it
//! names a tool that was offered, is taken as the call it meant, so the turn goes on instead of
//! stopping on a reply that only describes a call. Anything else stays text.

use serde_json::Value;

/// A call read from text: the tool's name and its arguments as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TextCall {
    pub name: String,
    pub arguments: String,
}

/// The calls `text` writes out, when all of them name one of `tools`; `None` when the text is
/// not (only) tool calls.
pub(super) fn calls_in_text(text: &str, tools: &[String]) -> Option<Vec<TextCall>> {
    let trimmed = text.trim();
    let blocks: Vec<&str> = if trimmed.contains("<tool_call>") {
        let mut blocks = Vec::new();
        let mut rest = trimmed;
        while let Some(start) = rest.find("<tool_call>") {
            // Text outside the blocks (other than whitespace) means this is not just calls.
            if !rest[..start].trim().is_empty() {
                return None;
            }
            let after = &rest[start + "<tool_call>".len()..];
            let end = after.find("</tool_call>")?;
            blocks.push(after[..end].trim());
            rest = &after[end + "</tool_call>".len()..];
        }
        if !rest.trim().is_empty() {
            return None;
        }
        blocks
    } else {
        vec![strip_fence(trimmed)]
    };
    let calls = blocks
        .into_iter()
        .map(|block| call_from_json(block, tools))
        .collect::<Option<Vec<_>>>()?;
    (!calls.is_empty()).then_some(calls)
}

/// The body of a ```json (or bare ```) fence around all of `text`, else `text`.
fn strip_fence(text: &str) -> &str {
    text.strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|body| body.strip_suffix("```"))
        .map_or(text, str::trim)
}

/// `{"name": TOOL, "arguments" | "parameters": {...} or "..."}` naming an offered tool.
fn call_from_json(block: &str, tools: &[String]) -> Option<TextCall> {
    let json: Value = serde_json::from_str(block).ok()?;
    let name = json.get("name")?.as_str()?;
    if !tools.iter().any(|tool| tool == name) {
        return None;
    }
    let arguments = match json.get("arguments").or_else(|| json.get("parameters")) {
        Some(Value::String(text)) => text.clone(),
        Some(args @ Value::Object(_)) => args.to_string(),
        None => "{}".to_string(),
        Some(_) => return None,
    };
    Some(TextCall {
        name: name.to_string(),
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<String> {
        vec!["shell".to_string(), "update_plan".to_string()]
    }

    #[test]
    fn hermes_blocks_and_bare_json_are_calls() {
        let text = "<tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": [\"ls\"]}}\n</tool_call>\n<tool_call>{\"name\": \"update_plan\", \"arguments\": \"{}\"}</tool_call>";
        let calls = calls_in_text(text, &tools()).unwrap_or_default();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "shell");
        assert_eq!(calls[0].arguments, r#"{"command":["ls"]}"#);
        assert_eq!(calls[1].arguments, "{}");
        let fenced =
            "```json\n{\"name\": \"shell\", \"parameters\": {\"command\": [\"pwd\"]}}\n```";
        assert_eq!(
            calls_in_text(fenced, &tools()).map(|calls| calls[0].arguments.clone()),
            Some(r#"{"command":["pwd"]}"#.to_string())
        );
    }

    #[test]
    fn prose_unknown_tools_and_mixed_text_stay_text() {
        assert_eq!(calls_in_text("All done.", &tools()), None);
        assert_eq!(
            calls_in_text(
                r#"{"name": "delete_everything", "arguments": {}}"#,
                &tools()
            ),
            None
        );
        assert_eq!(
            calls_in_text(
                "I will run it: <tool_call>{\"name\": \"shell\", \"arguments\": {}}</tool_call>",
                &tools()
            ),
            None
        );
        assert_eq!(calls_in_text(r#"{"answer": 42}"#, &tools()), None);
    }
}
