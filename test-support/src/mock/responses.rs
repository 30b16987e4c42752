//! The Responses API stream: `event:` + `data:` frames as the OpenAI API sends them.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::mock::script::{OutputItem, ToolCall, Usage};
use crate::mock::sse::{Ending, Render, event_frame};

/// Renders one turn as a Responses API event stream.
pub(crate) struct ResponsesRenderer<'a> {
    response_id: String,
    model: &'a str,
    items: &'a [OutputItem],
    usage: Usage,
    sequence: u64,
    done_items: Vec<Value>,
}

impl<'a> ResponsesRenderer<'a> {
    /// A renderer for the response to request number `request_index`.
    pub(crate) fn new(
        request_index: usize,
        model: &'a str,
        items: &'a [OutputItem],
        usage: Usage,
    ) -> Self {
        Self {
            response_id: format!("resp_{request_index}"),
            model,
            items,
            usage,
            sequence: 0,
            done_items: Vec::new(),
        }
    }

    fn frame(&mut self, event: &str, mut data: Value) -> Bytes {
        if let Value::Object(map) = &mut data {
            map.insert("type".into(), json!(event));
            map.insert("sequence_number".into(), json!(self.sequence));
        }
        self.sequence += 1;
        event_frame(event, &data)
    }

    fn response(&self, status: &str) -> Value {
        json!({
            "id": self.response_id,
            "object": "response",
            "created_at": 0,
            "status": status,
            "model": self.model,
            "output": self.done_items,
        })
    }

    fn item_frames(&mut self, output_index: usize, item: &OutputItem, frames: &mut Vec<Bytes>) {
        let item_id = format!("{}_item_{output_index}", self.response_id);
        let (added, deltas, done) = match item {
            OutputItem::Message { text } => message(&item_id, output_index, text),
            OutputItem::Reasoning { text } => reasoning(&item_id, output_index, text),
            OutputItem::Compaction { encrypted_content } => {
                let item = json!({
                    "type": "compaction",
                    "id": item_id,
                    "encrypted_content": encrypted_content,
                });
                (item.clone(), Vec::new(), item)
            }
            call => match call.tool_call() {
                Some(call) => tool_call(&item_id, output_index, &call),
                None => return,
            },
        };
        frames.push(self.frame(
            "response.output_item.added",
            json!({"output_index": output_index, "item": added}),
        ));
        for (event, data) in deltas {
            frames.push(self.frame(event, data));
        }
        frames.push(self.frame(
            "response.output_item.done",
            json!({"output_index": output_index, "item": done}),
        ));
        self.done_items.push(done);
    }
}

impl Render for ResponsesRenderer<'_> {
    fn body(&mut self) -> Vec<Bytes> {
        let mut frames = vec![self.frame(
            "response.created",
            json!({"response": self.response("in_progress")}),
        )];
        for (index, item) in self.items.iter().enumerate() {
            self.item_frames(index, item, &mut frames);
        }
        frames
    }

    fn ending(&mut self, ending: Ending<'_>) -> Vec<Bytes> {
        match ending {
            Ending::Truncated => Vec::new(),
            Ending::Completed => {
                let usage = &self.usage;
                let mut response = self.response("completed");
                response["usage"] = json!({
                    "input_tokens": usage.input_tokens,
                    "input_tokens_details": {"cached_tokens": usage.cached_tokens},
                    "output_tokens": usage.output_tokens,
                    "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                    "total_tokens": usage.total_tokens(),
                });
                vec![self.frame("response.completed", json!({"response": response}))]
            }
            Ending::Failed { code, message } => {
                let mut response = self.response("failed");
                response["error"] = json!({"code": code, "message": message});
                vec![self.frame("response.failed", json!({"response": response}))]
            }
        }
    }

    fn malformed(&self) -> Bytes {
        Bytes::from_static(
            b"event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"delta\": <<not json\n\n",
        )
    }
}

type ItemEvents = (Value, Vec<(&'static str, Value)>, Value);

fn message(item_id: &str, output_index: usize, text: &str) -> ItemEvents {
    let at = json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
    let mut events = vec![(
        "response.content_part.added",
        with(
            &at,
            json!({"part": {"type": "output_text", "text": "", "annotations": []}}),
        ),
    )];
    for delta in chunks(text) {
        events.push((
            "response.output_text.delta",
            with(&at, json!({"delta": delta})),
        ));
    }
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    events.push((
        "response.output_text.done",
        with(&at, json!({"text": text})),
    ));
    events.push((
        "response.content_part.done",
        with(&at, json!({"part": part})),
    ));
    let item = |status: &str, content: Value| json!({"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content});
    (
        item("in_progress", json!([])),
        events,
        item("completed", json!([part])),
    )
}

fn reasoning(item_id: &str, output_index: usize, text: &str) -> ItemEvents {
    let at = json!({"item_id": item_id, "output_index": output_index, "summary_index": 0});
    let mut events = vec![(
        "response.reasoning_summary_part.added",
        with(&at, json!({"part": {"type": "summary_text", "text": ""}})),
    )];
    for delta in chunks(text) {
        events.push((
            "response.reasoning_summary_text.delta",
            with(&at, json!({"delta": delta})),
        ));
    }
    events.push((
        "response.reasoning_summary_text.done",
        with(&at, json!({"text": text})),
    ));
    let item = |summary: Value| json!({"type": "reasoning", "id": item_id, "summary": summary});
    let mut done = item(json!([{"type": "summary_text", "text": text}]));
    // Opaque state a stateless (`store: false`) client must send back, derived from the id so
    // a test can recognise it.
    done["encrypted_content"] = json!(format!("encrypted-{item_id}"));
    (item(json!([])), events, done)
}

fn tool_call(item_id: &str, output_index: usize, call: &ToolCall<'_>) -> ItemEvents {
    let at = json!({"item_id": item_id, "output_index": output_index});
    match call {
        ToolCall::Function {
            call_id,
            name,
            arguments,
        } => {
            let item = |status: &str, arguments: &str| json!({"type": "function_call", "id": item_id, "status": status, "call_id": call_id, "name": name, "arguments": arguments});
            let events = vec![
                (
                    "response.function_call_arguments.delta",
                    with(&at, json!({"delta": arguments})),
                ),
                (
                    "response.function_call_arguments.done",
                    with(&at, json!({"arguments": arguments})),
                ),
            ];
            (
                item("in_progress", ""),
                events,
                item("completed", arguments),
            )
        }
        ToolCall::Custom {
            call_id,
            name,
            input,
        } => {
            let item = |status: &str, input: &str| json!({"type": "custom_tool_call", "id": item_id, "status": status, "call_id": call_id, "name": name, "input": input});
            let events = vec![
                (
                    "response.custom_tool_call_input.delta",
                    with(&at, json!({"delta": input})),
                ),
                (
                    "response.custom_tool_call_input.done",
                    with(&at, json!({"input": input})),
                ),
            ];
            (item("in_progress", ""), events, item("completed", input))
        }
    }
}

/// `base` with the members of `extra` added.
fn with(base: &Value, extra: Value) -> Value {
    let mut merged = base.clone();
    if let (Value::Object(merged), Value::Object(extra)) = (&mut merged, extra) {
        merged.extend(extra);
    }
    merged
}

/// Splits text into word-sized deltas (whitespace stays attached to the preceding word), so
/// clients see several deltas whose concatenation is the text.
pub(crate) fn chunks(text: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (index, ch) in text.char_indices() {
        if ch.is_whitespace() {
            in_space = true;
        } else if in_space {
            chunks.push(&text[start..index]);
            start = index;
            in_space = false;
        }
    }
    if start < text.len() {
        chunks.push(&text[start..]);
    }
    chunks
}
