//! The Chat Completions API: request body built from Responses-style history, and streaming
//! chunks accumulated back into Responses-style items.

use std::collections::BTreeMap;

use keel_protocol::TokenUsage;
use serde_json::{Value, json};

use crate::client::request_options::RequestOptions;
use crate::client::sse::Frame;
use crate::client::{Prompt, ResponseEvent};
use crate::error::{CoreError, Result};
use crate::models::ResponseItem;

/// The JSON body of `POST /chat/completions`.
/// The request body `prompt` becomes, as sent.
fn request_bytes(settings: &RequestOptions<'_>, prompt: &Prompt) -> Result<Vec<u8>> {
    serde_json::to_vec(&request_body(settings, prompt))
        .map_err(|err| crate::error::CoreError::Stream(format!("cannot encode the request: {err}")))
}

pub(super) fn request_body(settings: &RequestOptions<'_>, prompt: &Prompt) -> Value {
    let mut messages = vec![json!({"role": "system", "content": prompt.instructions})];
    // Reasoning goes back (when the provider wants it) only within the running turn: after
    // the last user message.
    let turn_start = prompt
        .input
        .iter()
        .rposition(|item| matches!(item, ResponseItem::Message { role, .. } if role == "user"))
        .unwrap_or(0);
    let mut reasoning: Option<String> = None;
    for (index, item) in prompt.input.iter().enumerate() {
        let carry = |message: &mut Value, reasoning: &mut Option<String>| {
            if let (Some(field), Some(text)) = (&settings.chat_reasoning_field, reasoning.take())
                && index > turn_start
            {
                message[*field] = Value::String(text);
            }
        };
        match item {
            ResponseItem::Message { role, content, .. } => {
                // Reasoning belongs to the step that follows it; a message ends that step.
                reasoning = None;
                let role = if role == "developer" { "system" } else { role };
                let has_image = content
                    .iter()
                    .any(|c| matches!(c, crate::models::ContentItem::InputImage { .. }));
                if has_image {
                    // Images go as content parts, which every vision-capable server takes.
                    let parts: Vec<Value> = content
                        .iter()
                        .map(|c| match c {
                            crate::models::ContentItem::InputImage { image_url } => {
                                json!({"type": "image_url", "image_url": {"url": image_url}})
                            }
                            other => {
                                json!({"type": "text", "text": other.text().unwrap_or_default()})
                            }
                        })
                        .collect();
                    messages.push(json!({"role": role, "content": parts}));
                } else {
                    let text: String = content.iter().filter_map(|c| c.text()).collect();
                    messages.push(json!({"role": role, "content": text}));
                }
            }
            ResponseItem::FunctionCall {
                name,
                arguments,
                call_id,
                ..
            } => {
                let mut message = assistant_tool_call(call_id, name, arguments.clone());
                carry(&mut message, &mut reasoning);
                messages.push(message);
            }
            ResponseItem::CustomToolCall {
                name,
                input,
                call_id,
                ..
            } => {
                let arguments = json!({ "input": input }).to_string();
                messages.push(assistant_tool_call(call_id, name, arguments));
            }
            ResponseItem::FunctionCallOutput { call_id, output }
            | ResponseItem::CustomToolCallOutput { call_id, output } => {
                // Chat tool messages take text: code mode's parts are joined (images dropped).
                messages.push(
                    json!({"role": "tool", "tool_call_id": call_id, "content": output.text()}),
                );
            }
            ResponseItem::Reasoning { summary, .. } => {
                let text: String = summary
                    .iter()
                    .map(|part| match part {
                        crate::models::ReasoningSummary::SummaryText { text } => text.as_str(),
                    })
                    .collect();
                if !text.is_empty() {
                    reasoning = Some(text);
                }
            }
            // Chat has no agent-message item: the sender's header and the text, as the user's.
            ResponseItem::AgentMessage { .. } => {
                reasoning = None;
                let text = item.agent_message_text().unwrap_or_default();
                messages.push(json!({"role": "user", "content": text}));
            }
            // Chat servers cannot read a provider's compaction summary.
            ResponseItem::Compaction { .. }
            | ResponseItem::CompactionTrigger
            | ResponseItem::Other => {}
        }
    }
    let tools: Vec<Value> = prompt.tools.iter().filter_map(chat_tool).collect();
    let mut body = json!({
        "model": settings.model,
        "messages": merge_adjacent(messages),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(effort) = settings.reasoning_effort {
        // Only when the user chose one: servers of models that do not reason may refuse it.
        let effort = settings.catalog.wire_effort(settings.model, effort);
        body["reasoning_effort"] = Value::String(effort.as_str().to_string());
    }
    if let Some(schema) = &prompt.output_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {
                "name": super::responses::OUTPUT_SCHEMA_NAME,
                "schema": schema,
                "strict": true,
            },
        });
    }
    body
}

/// The canonical form strict chat templates expect: the calls of one assistant step in one
/// assistant message (after its text, if any), then one `tool` message per call; consecutive
/// messages of the same role (system, user) joined into one. `tool` messages stay apart.
fn merge_adjacent(messages: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    for message in messages {
        let role = message["role"].as_str().unwrap_or_default().to_string();
        let Some(last) = out.last_mut() else {
            out.push(message);
            continue;
        };
        if role == "tool" || last["role"] != role.as_str() {
            out.push(message);
            continue;
        }
        if role == "assistant" {
            // Text after calls would change their order: only calls (and text before them)
            // join the message.
            let last_has_calls = last.get("tool_calls").is_some();
            let text = message["content"].as_str().unwrap_or_default();
            match message.get("tool_calls").and_then(Value::as_array) {
                Some(calls) => {
                    if !text.is_empty() {
                        out.push(message);
                        continue;
                    }
                    let mut joined = last["tool_calls"].as_array().cloned().unwrap_or_default();
                    joined.extend(calls.iter().cloned());
                    last["tool_calls"] = Value::Array(joined);
                }
                None if last_has_calls => {
                    out.push(message);
                    continue;
                }
                None => join_content(last, &message),
            }
        } else {
            join_content(last, &message);
        }
    }
    out
}

/// Appends `message`'s content to `last`'s: text joined by a blank line, parts concatenated.
fn join_content(last: &mut Value, message: &Value) {
    let as_parts = |content: &Value| -> Vec<Value> {
        match content {
            Value::String(text) if text.is_empty() => Vec::new(),
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(parts) => parts.clone(),
            _ => Vec::new(),
        }
    };
    match (&last["content"], &message["content"]) {
        (Value::String(a), Value::String(b)) => {
            let joined = match (a.is_empty(), b.is_empty()) {
                (true, _) => b.clone(),
                (_, true) => a.clone(),
                _ => format!("{a}\n\n{b}"),
            };
            last["content"] = Value::String(joined);
        }
        (Value::Null, other) => last["content"] = other.clone(),
        (first, second) => {
            let mut parts = as_parts(first);
            parts.extend(as_parts(second));
            last["content"] = Value::Array(parts);
        }
    }
}

fn assistant_tool_call(call_id: &str, name: &str, arguments: String) -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }],
    })
}

/// Converts a Responses tool definition to the Chat form. Freeform tools become functions
/// with a single `input` string argument.
fn chat_tool(tool: &Value) -> Option<Value> {
    let name = tool.get("name")?.clone();
    let description = tool.get("description").cloned().unwrap_or(Value::Null);
    let parameters = match tool.get("type").and_then(Value::as_str) {
        Some("function") => tool.get("parameters").cloned().unwrap_or(json!({})),
        Some("custom") => json!({
            "type": "object",
            "properties": {"input": {"type": "string"}},
            "required": ["input"],
        }),
        _ => return None,
    };
    Some(json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }))
}

#[derive(Default)]
struct PendingToolCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates chat chunks: text and reasoning deltas pass through, tool-call fragments are
/// joined by index. Written for what local servers (Ollama, vLLM, llama.cpp, LM Studio) really
/// send: arguments split over many chunks, several calls interleaved by index (or a call
/// without an index that starts with a new id), an id only on a call's first chunk or none at
/// all, arguments as a JSON object instead of a string, `reasoning_content` / `reasoning`
/// deltas, usage only in the last chunk or missing, no `finish_reason`, no `[DONE]`.
#[derive(Default)]
pub(super) struct ChatAccumulator {
    text: String,
    reasoning: String,
    tool_calls: BTreeMap<u64, PendingToolCall>,
    /// The key the last fragment went to.
    last_call_key: Option<u64>,
    /// The call each stream `index` currently continues (a server may reuse an index for a
    /// new call, with a new id).
    index_keys: BTreeMap<u64, u64>,
    usage: Option<TokenUsage>,
    response_id: String,
    finish_reason_seen: bool,
    /// The tools the request offered, to recognise a call written out as text.
    offered_tools: Vec<String>,
}

impl ChatAccumulator {
    /// An accumulator for a request that offered `tools` (Chat or Responses definitions).
    pub(super) fn for_tools(tools: &[Value]) -> Self {
        Self {
            offered_tools: tools
                .iter()
                .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect(),
            ..Self::default()
        }
    }

    /// Maps one SSE frame to zero or more response events.
    pub(super) fn map_frame(&mut self, frame: &Frame) -> Result<Vec<ResponseEvent>> {
        if frame.data.trim() == "[DONE]" {
            return Ok(self.finish());
        }
        let chunk: Value = serde_json::from_str(&frame.data)
            .map_err(|err| CoreError::Stream(format!("unreadable chat chunk: {err}")))?;
        if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
            let code = chunk
                .pointer("/error/code")
                .and_then(Value::as_str)
                .map(str::to_string);
            return Err(CoreError::ResponseFailed {
                code,
                message: message.to_string(),
            });
        }
        let mut events = Vec::new();
        if self.response_id.is_empty()
            && let Some(id) = chunk.get("id").and_then(Value::as_str)
        {
            self.response_id = id.to_string();
            events.push(ResponseEvent::Created);
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            let read = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(TokenUsage {
                input_tokens: read("prompt_tokens"),
                cached_input_tokens: usage
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: read("completion_tokens"),
                reasoning_output_tokens: usage
                    .pointer("/completion_tokens_details/reasoning_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                total_tokens: read("total_tokens"),
            });
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
                self.finish_reason_seen = true;
            }
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            for key in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(key).and_then(Value::as_str)
                    && !text.is_empty()
                {
                    self.reasoning.push_str(text);
                    events.push(ResponseEvent::ReasoningSummaryDelta(text.to_string()));
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                self.text.push_str(text);
                events.push(ResponseEvent::OutputTextDelta(text.to_string()));
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                self.add_call_fragment(call);
            }
        }
        // Usage comes last, after the `finish_reason`: the answer is complete.
        if self.finish_reason_seen && self.usage.is_some() {
            events.extend(self.finish());
        }
        Ok(events)
    }

    /// Joins one tool-call fragment to the call it belongs to.
    fn add_call_fragment(&mut self, call: &Value) {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let next_key = self.tool_calls.keys().next_back().map_or(0, |k| k + 1);
        // A fragment with an id other than that of the call it would continue starts a call.
        let starts_new = |key: u64| {
            id.is_some_and(|id| {
                self.tool_calls
                    .get(&key)
                    .is_some_and(|c| !c.id.is_empty() && c.id != id)
            })
        };
        let key = match call.get("index").and_then(Value::as_u64) {
            Some(index) => match self.index_keys.get(&index).copied() {
                Some(key) if !starts_new(key) => key,
                _ => {
                    self.index_keys.insert(index, next_key);
                    next_key
                }
            },
            // No index: a fragment with a new id starts a call, others continue the last one.
            None => match (self.last_call_key, id) {
                (Some(last), Some(id))
                    if self.tool_calls.get(&last).is_some_and(|c| c.id != id) =>
                {
                    next_key
                }
                (Some(last), _) => last,
                (None, _) => next_key,
            },
        };
        self.last_call_key = Some(key);
        let pending = self.tool_calls.entry(key).or_default();
        if let Some(id) = id {
            pending.id = id.to_string();
        }
        if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
            pending.name.push_str(name);
        }
        match call.pointer("/function/arguments") {
            Some(Value::String(args)) => pending.arguments.push_str(args),
            Some(Value::Null) | None => {}
            // Some servers send the arguments as a JSON object.
            Some(args) => pending.arguments.push_str(&args.to_string()),
        }
    }

    /// Whether a chunk gave a `finish_reason` (the answer is over even if `[DONE]` never comes).
    pub(super) fn saw_finish_reason(&self) -> bool {
        self.finish_reason_seen
    }

    /// Emits the accumulated items and the completion, once.
    pub(super) fn finish(&mut self) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        if !self.reasoning.is_empty() {
            events.push(ResponseEvent::OutputItemDone(ResponseItem::Reasoning {
                id: None,
                summary: vec![crate::models::ReasoningSummary::SummaryText {
                    text: std::mem::take(&mut self.reasoning),
                }],
                encrypted_content: None,
            }));
        }
        // A reply that only writes out calls of offered tools is taken as those calls.
        if self.tool_calls.is_empty()
            && let Some(calls) =
                super::text_tool_calls::calls_in_text(&self.text, &self.offered_tools)
        {
            tracing::info!(
                calls = calls.len(),
                "the model wrote its tool calls as text; running them as calls"
            );
            self.text.clear();
            for (key, call) in (0u64..).zip(calls) {
                self.tool_calls.insert(
                    key,
                    PendingToolCall {
                        id: String::new(),
                        name: call.name,
                        arguments: call.arguments,
                    },
                );
            }
        }
        if !self.text.is_empty() {
            events.push(ResponseEvent::OutputItemDone(ResponseItem::Message {
                id: None,
                role: "assistant".to_string(),
                content: vec![crate::models::ContentItem::OutputText {
                    text: std::mem::take(&mut self.text),
                }],
            }));
        }
        for (key, call) in std::mem::take(&mut self.tool_calls) {
            // A server that gives no id still needs one the tool output can name.
            let call_id = if call.id.is_empty() {
                format!("call_{}_{key}", uuid::Uuid::new_v4().simple())
            } else {
                call.id
            };
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            events.push(ResponseEvent::OutputItemDone(ResponseItem::FunctionCall {
                id: None,
                name: call.name,
                namespace: None,
                arguments,
                call_id,
            }));
        }
        self.last_call_key = None;
        self.index_keys.clear();
        self.finish_reason_seen = false;
        events.push(ResponseEvent::Completed {
            response_id: std::mem::take(&mut self.response_id),
            token_usage: self.usage.take(),
        });
        events
    }
}

impl crate::client::wire_decoder::WireDecoder for ChatAccumulator {
    fn map_frame(&mut self, frame: &Frame) -> Result<Vec<ResponseEvent>> {
        ChatAccumulator::map_frame(self, frame)
    }

    fn answered(&self) -> bool {
        self.saw_finish_reason()
    }

    fn finish(&mut self) -> Vec<ResponseEvent> {
        ChatAccumulator::finish(self)
    }
}

/// The Chat Completions API (`POST /chat/completions`): function tools only.
pub(super) struct ChatFormat;

impl crate::client::wire_format::WireFormat for ChatFormat {
    fn endpoint_path(&self) -> &'static str {
        "chat/completions"
    }

    fn capabilities(&self) -> crate::client::ProviderCapabilities {
        crate::client::ProviderCapabilities::default()
    }

    fn request_bytes(&self, settings: &RequestOptions<'_>, prompt: &Prompt) -> Result<Vec<u8>> {
        request_bytes(settings, prompt)
    }

    fn decoder(&self, prompt: &Prompt) -> Box<dyn crate::client::wire_decoder::WireDecoder> {
        Box::new(ChatAccumulator::for_tools(&prompt.tools))
    }
}
