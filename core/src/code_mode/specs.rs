//! What a code-mode model is offered, in the shape Codex 0.171 sends: namespaces holding
//! `exec` (a grammar-constrained custom tool whose description declares every nested tool in
//! TypeScript, generated from the tool's own schema), `wait`, the tools the model calls
//! directly, `clock.sleep`, and the sub-agent tools under `collaboration`.

use serde_json::{Value, json};

/// The grammar of `exec`'s input: an optional pragma line, then the source.
const EXEC_GRAMMAR: &str = "\nstart: pragma_source | plain_source\npragma_source: PRAGMA_LINE NEWLINE SOURCE\nplain_source: SOURCE\n\nPRAGMA_LINE: /[ \\t]*\\/\\/ @exec:[^\\r\\n]*/\nNEWLINE: /\\r?\\n/\nSOURCE: /[\\s\\S]+/\n";

/// What `exec` promises, before the nested tools' declarations.
const EXEC_INTRO: &str = "Runs JavaScript that calls tools and computes with their results.
- The input is the source of an async JavaScript module (top-level `await` works), run in a fresh sandboxed engine: no Node APIs, file system, network, processes or console. Send raw JavaScript, not JSON, quotes or Markdown fences.
- Every nested tool is a method of the global `tools` object, e.g. `await tools.exec_command({cmd: \"ls\"})`; names are the tool names made into JavaScript identifiers. A method takes an object (function tools) or a string (freeform tools such as `apply_patch`) and returns a promise of an object or a string.
- An optional first line `// @exec: {\"yield_time_ms\": 10000, \"max_output_tokens\": 1000}` sets how long the call waits before yielding (default 30000 ms) and how many tokens of output it returns (default 10000).
- A script still running when the yield time passes keeps running: the output says `Script running with cell ID N`; call `wait` with that id for more.
- When the module settles the script ends; promises nobody awaited are dropped.

Globals:
- `text(value)`: adds a text item to the output (non-strings as JSON).
- `image(urlOrItem)`: adds an image: a `data:` URL, `{image_url}`, or an MCP image content block.
- `notify(value)`: sends the value to you as an output item of its own, right after this call's output.
- `store(key, value)` / `load(key)`: keep a JSON value for later `exec` calls of this conversation.
- `exit()`: ends the script successfully at once.
- `yield_control()`: returns the output so far to you now; the script keeps running.
- `setTimeout(callback, ms)` / `clearTimeout(id)`: timers (they do not keep the script alive; await a promise to wait for one).
- `ALL_TOOLS`: `{name, description}` of every nested tool.
";

/// A nested tool as `exec`'s description declares it.
pub(super) struct NestedTool<'a> {
    /// Its name on `tools`.
    pub js_name: &'a str,
    /// Its definition as the registry offers it.
    pub spec: &'a Value,
}

/// The tool name as a JavaScript identifier: other characters become `_`.
pub(super) fn js_identifier(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if id.starts_with(|c: char| c.is_ascii_digit()) || id.is_empty() {
        id.insert(0, '_');
    }
    id
}

/// The description of one tool definition.
pub(super) fn description_of(spec: &Value) -> &str {
    spec["description"].as_str().unwrap_or_default()
}

/// `exec`: its description declares `nested`.
pub(super) fn exec_tool(nested: &[NestedTool<'_>]) -> Value {
    let mut description = EXEC_INTRO.to_string();
    for tool in nested {
        description.push_str(&format!(
            "\n### `{}`\n{}\n\n```ts\ndeclare const tools: {{ {}({}): Promise<{}>; }};\n```\n",
            tool.js_name,
            description_of(tool.spec).trim(),
            tool.js_name,
            parameters_ts(tool.spec),
            result_ts(tool.js_name),
        ));
    }
    json!({
        "type": "custom",
        "name": "exec",
        "description": description,
        "format": {"type": "grammar", "syntax": "lark", "definition": EXEC_GRAMMAR},
    })
}

/// `wait`: more output from a running cell, or its end.
pub(super) fn wait_tool() -> Value {
    json!({
        "type": "function",
        "name": "wait",
        "description": "Waits for a running `exec` cell: returns what it printed since the last call, and how it ended if it did.",
        "strict": false,
        "parameters": {
            "type": "object",
            "properties": {
                "cell_id": {"type": "string", "description": "The cell's id, from `Script running with cell ID N`."},
                "max_tokens": {"type": "number", "description": "How many tokens of output to return (default 10000)."},
                "terminate": {"type": "boolean", "description": "Stop the cell instead of waiting for it."},
                "yield_time_ms": {"type": "number", "description": "How long to wait before returning (default 30000)."}
            },
            "required": ["cell_id"],
            "additionalProperties": false
        }
    })
}

/// A namespace of tools.
pub(super) fn namespace(name: &str, description: &str, tools: Vec<Value>) -> Value {
    json!({"type": "namespace", "name": name, "description": description, "tools": tools})
}

/// The parameter list of a tool, in TypeScript.
fn parameters_ts(spec: &Value) -> String {
    if spec["type"] == "custom" {
        return "input: string".to_string();
    }
    format!("args: {}", ts_type(&spec["parameters"], 1))
}

/// What a nested call's promise resolves to, in TypeScript.
fn result_ts(js_name: &str) -> &'static str {
    match js_name {
        "exec_command" | "write_stdin" => {
            "{ chunk_id?: string; wall_time_seconds: number; exit_code?: number; session_id?: number; original_token_count?: number; output: string }"
        }
        _ => "unknown",
    }
}

/// A JSON Schema as a TypeScript type.
fn ts_type(schema: &Value, depth: usize) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let literals: Vec<String> = values.iter().map(Value::to_string).collect();
        if !literals.is_empty() {
            return literals.join(" | ");
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema[key].as_array() {
            let types: Vec<String> = options
                .iter()
                .map(|option| ts_type(option, depth))
                .collect();
            if !types.is_empty() {
                return types.join(" | ");
            }
        }
    }
    match &schema["type"] {
        Value::Array(types) => types
            .iter()
            .map(|kind| ts_type(&json!({"type": kind, "items": schema["items"], "properties": schema["properties"], "required": schema["required"]}), depth))
            .collect::<Vec<_>>()
            .join(" | "),
        Value::String(kind) => match kind.as_str() {
            "string" => "string".to_string(),
            "number" | "integer" => "number".to_string(),
            "boolean" => "boolean".to_string(),
            "null" => "null".to_string(),
            "array" => format!("Array<{}>", ts_type(&schema["items"], depth)),
            "object" => object_ts(schema, depth),
            _ => "unknown".to_string(),
        },
        _ if schema.get("properties").is_some() => object_ts(schema, depth),
        _ => "unknown".to_string(),
    }
}

fn object_ts(schema: &Value, depth: usize) -> String {
    let Some(properties) = schema["properties"].as_object() else {
        return "{ [key: string]: unknown }".to_string();
    };
    if properties.is_empty() {
        return "{}".to_string();
    }
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let indent = "  ".repeat(depth);
    let mut out = String::from("{\n");
    for (name, property) in properties {
        if let Some(description) = property["description"].as_str() {
            out.push_str(&format!("{indent}// {}\n", description.replace('\n', " ")));
        }
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{indent}{name}{optional}: {};\n",
            ts_type(property, depth + 1)
        ));
    }
    out.push_str(&"  ".repeat(depth.saturating_sub(1)));
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_come_from_schemas() {
        let exec_command = json!({"type": "function", "name": "exec_command", "description": "Run it.",
            "parameters": {"type": "object", "properties": {
                "cmd": {"type": "string", "description": "The command."},
                "tty": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "argv": {"type": "array", "items": {"type": "string"}}},
                "required": ["cmd"]}});
        let patch = json!({"type": "custom", "name": "apply_patch", "description": "Patch."});
        let tool = exec_tool(&[
            NestedTool {
                js_name: "exec_command",
                spec: &exec_command,
            },
            NestedTool {
                js_name: "apply_patch",
                spec: &patch,
            },
        ]);
        let description = tool["description"].as_str().unwrap();
        assert!(
            description.contains("exec_command(args: {\n"),
            "{description}"
        );
        assert!(
            description.contains("\n  // The command.\n  cmd: string;\n"),
            "{description}"
        );
        assert!(description.contains("tty?: boolean;"));
        assert!(description.contains("mode?: \"a\" | \"b\";"));
        assert!(description.contains("argv?: Array<string>;"));
        assert!(description.contains("apply_patch(input: string): Promise<unknown>"));
        assert_eq!(tool["format"]["syntax"], "lark");
        assert_eq!(
            js_identifier("mcp__my-server__read"),
            "mcp__my_server__read"
        );
        assert_eq!(js_identifier("9lives"), "_9lives");
    }
}
