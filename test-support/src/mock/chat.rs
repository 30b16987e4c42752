//! The Chat Completions stream: `data:` chunks with `choices[].delta`, then `data: [DONE]`.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::mock::responses::chunks;
use crate::mock::script::{OutputItem, ToolCall, Usage};
use crate::mock::sse::{Ending, Render, data_frame};

/// Renders one turn as a Chat Completions chunk stream.
///
/// Chat has no freeform tools, so `custom_tool_call`s (and `apply_patch_call`) become function
/// tool calls whose arguments are `{"input": <freeform text>}`.
pub(crate) struct ChatRenderer<'a> {
    id: String,
    model: &'a str,
    items: &'a [OutputItem],
    usage: Usage,
    has_tool_calls: bool,
}

impl<'a> ChatRenderer<'a> {
    /// A renderer for the response to request number `request_index`.
    pub(crate) fn new(
        request_index: usize,
        model: &'a str,
        items: &'a [OutputItem],
        usage: Usage,
    ) -> Self {
        Self {
            id: format!("chatcmpl-{request_index}"),
            model,
            items,
            usage,
            has_tool_calls: false,
        }
    }

    fn chunk(&self, choices: Value) -> Bytes {
        let chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": choices,
        });
        data_frame(&chunk.to_string())
    }

    fn delta(&self, delta: Value) -> Bytes {
        self.chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}]))
    }
}

impl Render for ChatRenderer<'_> {
    fn body(&mut self) -> Vec<Bytes> {
        let mut frames = vec![self.delta(json!({"role": "assistant", "content": ""}))];
        let mut tool_index = 0;
        for item in self.items {
            match item {
                OutputItem::Message { text } => {
                    for piece in chunks(text) {
                        frames.push(self.delta(json!({"content": piece})));
                    }
                }
                OutputItem::Reasoning { text } => {
                    for piece in chunks(text) {
                        frames.push(self.delta(json!({"reasoning": piece})));
                    }
                }
                call => {
                    let Some(call) = call.tool_call() else {
                        continue;
                    };
                    let (call_id, name, arguments) = match call {
                        ToolCall::Function {
                            call_id,
                            name,
                            arguments,
                        } => (call_id, name, arguments),
                        ToolCall::Custom {
                            call_id,
                            name,
                            input,
                        } => (
                            call_id,
                            name.to_owned(),
                            json!({"input": input}).to_string(),
                        ),
                    };
                    // The first fragment names the call; arguments follow as a second delta,
                    // as the API streams them.
                    frames.push(self.delta(json!({"tool_calls": [{
                        "index": tool_index, "id": call_id, "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]})));
                    frames.push(self.delta(json!({"tool_calls": [{
                        "index": tool_index, "function": {"arguments": arguments},
                    }]})));
                    tool_index += 1;
                    self.has_tool_calls = true;
                }
            }
        }
        frames
    }

    fn ending(&mut self, ending: Ending<'_>) -> Vec<Bytes> {
        if let Ending::Failed { code, message } = ending {
            let error = json!({"error": {"code": code, "message": message, "type": code}});
            return vec![data_frame(&error.to_string())];
        }
        let finish_reason = if self.has_tool_calls {
            "tool_calls"
        } else {
            "stop"
        };
        let usage = &self.usage;
        let mut frames = vec![
            self.chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}])),
            data_frame(
                &json!({
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": self.model,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": usage.input_tokens,
                        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
                        "completion_tokens": usage.output_tokens,
                        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
                        "total_tokens": usage.total_tokens(),
                    },
                })
                .to_string(),
            ),
        ];
        if matches!(ending, Ending::Completed) {
            frames.push(data_frame("[DONE]"));
        }
        frames
    }

    fn malformed(&self) -> Bytes {
        data_frame("{\"choices\": <<not json")
    }
}
