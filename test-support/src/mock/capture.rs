//! What the mock records about each request it receives.

use serde::Serialize;
use serde_json::Value;

/// Which endpoint a request hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `POST {base}/responses`.
    Responses,
    /// `POST {base}/chat/completions`.
    ChatCompletions,
    /// `GET {base}/models`.
    Models,
    /// Ollama's `POST /api/show` (a model's details).
    OllamaShow,
    /// Ollama's `GET /api/version`.
    OllamaVersion,
    /// Anything else (answered 404 and recorded as a violation).
    Unknown,
}

impl Endpoint {
    /// Whether requests to this endpoint consume a scripted turn.
    pub fn is_model_request(self) -> bool {
        match self {
            Self::Responses | Self::ChatCompletions => true,
            Self::Models | Self::OllamaShow | Self::OllamaVersion | Self::Unknown => false,
        }
    }
}

/// One request as the mock received it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapturedRequest {
    /// Arrival order among all requests, from 0.
    pub index: usize,
    /// The endpoint hit.
    pub endpoint: Endpoint,
    /// The HTTP method.
    pub method: String,
    /// The request path, e.g. `/v1/responses`.
    pub path: String,
    /// The headers in the order received, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty or not JSON (the latter is a violation).
    pub body: Value,
}

impl CapturedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The conversation sent: the Responses `input` array, or the Chat `messages` array.
    pub fn input(&self) -> &[Value] {
        let key = match self.endpoint {
            Endpoint::ChatCompletions => "messages",
            Endpoint::Responses
            | Endpoint::Models
            | Endpoint::OllamaShow
            | Endpoint::OllamaVersion
            | Endpoint::Unknown => "input",
        };
        self.body
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The names of the tools offered: `name` (or `function.name`), else the tool's `type`
    /// for built-in tools such as `local_shell` or `web_search`.
    pub fn tool_names(&self) -> Vec<String> {
        let Some(tools) = self.body.get("tools").and_then(Value::as_array) else {
            return Vec::new();
        };
        tools
            .iter()
            .filter_map(|tool| {
                tool.get("name")
                    .or_else(|| tool.pointer("/function/name"))
                    .or_else(|| tool.get("type"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    /// The call ids of every tool output sent back, in order.
    pub fn tool_output_call_ids(&self) -> Vec<String> {
        tool_items(self)
            .outputs
            .into_iter()
            .map(|(call_id, _)| call_id)
            .collect()
    }

    /// The output sent back for `call_id`: the `output` of a `function_call_output` /
    /// `custom_tool_call_output`, or the `content` of a Chat `tool` message.
    pub fn tool_output(&self, call_id: &str) -> Option<&Value> {
        tool_items(self)
            .outputs
            .into_iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, output)| output)
    }
}

/// The tool calls and outputs found in a request's conversation.
pub(crate) struct ToolItems<'a> {
    /// Call ids of the calls, in order.
    pub(crate) calls: Vec<String>,
    /// Call ids and output payloads of the outputs, in order.
    pub(crate) outputs: Vec<(String, &'a Value)>,
}

/// Collects the tool calls and outputs of `request`'s input (Responses items or Chat messages).
pub(crate) fn tool_items(request: &CapturedRequest) -> ToolItems<'_> {
    let mut items = ToolItems {
        calls: Vec::new(),
        outputs: Vec::new(),
    };
    let id = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    for entry in request.input() {
        match request.endpoint {
            Endpoint::ChatCompletions => {
                if let Some(calls) = entry.get("tool_calls").and_then(Value::as_array) {
                    items
                        .calls
                        .extend(calls.iter().filter_map(|call| id(call, "id")));
                }
                if entry.get("role").and_then(Value::as_str) == Some("tool")
                    && let Some(call_id) = id(entry, "tool_call_id")
                {
                    items
                        .outputs
                        .push((call_id, entry.get("content").unwrap_or(&Value::Null)));
                }
            }
            Endpoint::Responses
            | Endpoint::Models
            | Endpoint::OllamaShow
            | Endpoint::OllamaVersion
            | Endpoint::Unknown => {
                let kind = entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let Some(call_id) = id(entry, "call_id") else {
                    continue;
                };
                match kind {
                    "function_call" | "custom_tool_call" | "local_shell_call" => {
                        items.calls.push(call_id);
                    }
                    "function_call_output" | "custom_tool_call_output" => items
                        .outputs
                        .push((call_id, entry.get("output").unwrap_or(&Value::Null))),
                    _ => {}
                }
            }
        }
    }
    items
}
