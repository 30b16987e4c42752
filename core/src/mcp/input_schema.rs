//! MCP tool input schemas made acceptable as function parameters.
//!
//! Servers publish any JSON Schema; the Responses and Chat APIs reject some of it (a top
//! level that is not an object, `$schema` and other meta keywords, nodes without a `type`).
//! The schema is rewritten keeping what describes arguments: types, properties, items,
//! required lists, enums, combinators and the usual bounds.

use serde_json::{Map, Value};

/// Keywords kept on every schema node.
const KEPT: &[&str] = &[
    "type",
    "description",
    "title",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "default",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "allOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "$ref",
    "$defs",
    "definitions",
];

/// The function `parameters` for a tool's `inputSchema`: always an object with `properties`.
pub(crate) fn function_parameters(input_schema: &Map<String, Value>) -> Value {
    let mut top = match sanitize(&Value::Object(input_schema.clone())) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if top.get("type").and_then(Value::as_str) != Some("object") {
        top.insert("type".to_string(), Value::from("object"));
    }
    if !top.get("properties").is_some_and(Value::is_object) {
        top.insert("properties".to_string(), Value::Object(Map::new()));
    }
    Value::Object(top)
}

fn sanitize(schema: &Value) -> Value {
    let Value::Object(node) = schema else {
        // `true`/`false` schemas (and anything malformed) become "any value".
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (key, value) in node {
        if !KEPT.contains(&key.as_str()) {
            continue;
        }
        let cleaned = match key.as_str() {
            "properties" | "$defs" | "definitions" => match value {
                Value::Object(children) => Value::Object(
                    children
                        .iter()
                        .map(|(name, child)| (name.clone(), sanitize(child)))
                        .collect(),
                ),
                _ => continue,
            },
            "items" => match value {
                Value::Array(tuple) => tuple.first().map_or(Value::Object(Map::new()), sanitize),
                other => sanitize(other),
            },
            "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(options) => Value::Array(options.iter().map(sanitize).collect()),
                _ => continue,
            },
            "additionalProperties" => match value {
                Value::Bool(flag) => Value::Bool(*flag),
                other => sanitize(other),
            },
            "required" => match value {
                Value::Array(names) => Value::Array(
                    names
                        .iter()
                        .filter(|name| name.is_string())
                        .cloned()
                        .collect(),
                ),
                _ => continue,
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), cleaned);
    }
    if !out.contains_key("type")
        && !has_combinator(&out)
        && !out.contains_key("$ref")
        && let Some(inferred) = infer_type(&out)
    {
        out.insert("type".to_string(), Value::from(inferred));
    }
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.insert("items".to_string(), Value::Object(Map::new()));
    }
    Value::Object(out)
}

fn has_combinator(node: &Map<String, Value>) -> bool {
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .any(|key| node.contains_key(*key))
}

/// A type for a node that names none, from what it holds; `None` leaves it "any value".
fn infer_type(node: &Map<String, Value>) -> Option<&'static str> {
    if node.contains_key("properties") || node.contains_key("additionalProperties") {
        return Some("object");
    }
    if node.contains_key("items") {
        return Some("array");
    }
    let sample = node
        .get("enum")
        .and_then(|values| values.as_array()?.first().cloned())
        .or_else(|| node.get("const").cloned())?;
    Some(match sample {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(schema: Value) -> Value {
        match schema {
            Value::Object(map) => function_parameters(&map),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn meta_keywords_go_and_types_are_filled_in() {
        let cleaned = params(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow"], "description": "How."},
                "tags": {"type": "array"},
                "meta": {"properties": {"x": true}},
                "count": {"type": "integer", "minimum": 1, "x-internal": 5}
            },
            "required": ["mode", 3]
        }));
        assert_eq!(
            cleaned,
            json!({
                "type": "object",
                "properties": {
                    "mode": {"enum": ["fast", "slow"], "description": "How.", "type": "string"},
                    "tags": {"type": "array", "items": {}},
                    "meta": {"type": "object", "properties": {"x": {}}},
                    "count": {"type": "integer", "minimum": 1}
                },
                "required": ["mode"]
            })
        );
    }

    #[test]
    fn an_empty_schema_becomes_an_object_without_properties() {
        assert_eq!(
            params(json!({})),
            json!({"type": "object", "properties": {}})
        );
    }
}
