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
        crate::mock::invariants::tool_items(self)
            .outputs
            .into_iter()
            .map(|(call_id, _)| call_id)
            .collect()
    }

    /// The output sent back for `call_id`: the `output` of a `function_call_output` /
    /// `custom_tool_call_output`, or the `content` of a Chat `tool` message.
    pub fn tool_output(&self, call_id: &str) -> Option<&Value> {
        crate::mock::invariants::tool_items(self)
            .outputs
            .into_iter()
            .find(|(id, _)| id == call_id)
            .map(|(_, output)| output)
    }
}
