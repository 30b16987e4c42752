//! What a worker is told: the job's instruction with the row's values filled in, and the
//! lines that identify its job and row.

use std::collections::HashMap;

/// `template` with each `{column}` replaced by the row's value; `{{` and `}}` are literal
/// braces, and a `{name}` that is not a column is left as written.
pub(crate) fn render(template: &str, headers: &[String], fields: &[String]) -> String {
    let values: HashMap<&str, &str> = headers
        .iter()
        .map(String::as_str)
        .zip(fields.iter().map(String::as_str))
        .collect();
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if tail.starts_with('{')
            && let Some(end) = tail.find('}')
            && let Some(value) = values.get(&tail[1..end])
        {
            out.push_str(value);
            rest = &tail[end + 1..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The row as a JSON object, column name to value.
pub(crate) fn row_object(headers: &[String], fields: &[String]) -> serde_json::Value {
    serde_json::Value::Object(
        headers
            .iter()
            .cloned()
            .zip(fields.iter().cloned().map(serde_json::Value::String))
            .collect(),
    )
}

/// The worker's whole first message.
pub(crate) fn worker_prompt(
    job_id: &str,
    item_id: &str,
    task: &str,
    row: &serde_json::Value,
    schema: Option<&serde_json::Value>,
) -> String {
    let schema = schema.map_or_else(|| "any JSON object".to_string(), ToString::to_string);
    format!(
        "You are one worker of an agent job: do the task below for this one row, then call \
         `report_agent_job_result` once with the job id, the item id and your result.\n\
         \n\
         Job ID: {job_id}\n\
         Item ID: {item_id}\n\
         \n\
         Task:\n{task}\n\
         \n\
         Row (JSON):\n{row}\n\
         \n\
         Result schema:\n{schema}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn columns_are_filled_and_other_braces_kept() {
        let headers = strings(&["name", "city"]);
        let fields = strings(&["Ada", "London, UK"]);
        assert_eq!(
            render(
                "Greet {name} of {city}; {{literal}} {unknown} {",
                &headers,
                &fields
            ),
            "Greet Ada of London, UK; {literal} {unknown} {"
        );
    }
}
