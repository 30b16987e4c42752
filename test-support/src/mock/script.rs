//! Scripts: what the mock model answers, turn by turn, and the JSON file format for them.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mock::fault::Fault;

/// One item the mock model outputs in a turn.
///
/// Serialized with a snake_case `type` tag; see the crate docs for the JSON form of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// An assistant message with one `output_text` part, streamed as text deltas.
    #[serde(alias = "assistant_message")]
    Message {
        /// The message text.
        text: String,
    },
    /// A reasoning item whose summary is `text`, streamed as summary deltas.
    Reasoning {
        /// The reasoning summary text.
        text: String,
    },
    /// A `function_call` of any function tool.
    FunctionCall {
        /// The call id the client must echo in its `function_call_output`.
        call_id: String,
        /// The tool name.
        name: String,
        /// The arguments as JSON text; a JSON file may give an object instead.
        #[serde(deserialize_with = "arguments_text")]
        arguments: String,
    },
    /// A call of the Codex `shell` function tool: `{"command": [argv..], "workdir"?, "timeout_ms"?}`.
    ShellCall {
        /// The call id.
        call_id: String,
        /// The argv to run.
        command: Vec<String>,
        /// The working directory, if the call names one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workdir: Option<String>,
        /// The timeout in milliseconds, if the call names one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// A `custom_tool_call` of a freeform tool.
    CustomToolCall {
        /// The call id the client must echo in its `custom_tool_call_output`.
        call_id: String,
        /// The tool name.
        name: String,
        /// The freeform input.
        input: String,
    },
    /// A freeform `apply_patch` call (a `custom_tool_call` named `apply_patch`).
    ApplyPatchCall {
        /// The call id.
        call_id: String,
        /// The patch text, `*** Begin Patch` … `*** End Patch`.
        patch: String,
    },
    /// The answer to a remote compaction request: a `compaction` item carrying an opaque
    /// summary (Responses only; a Chat stream leaves it out).
    Compaction {
        /// The summary the client must send back as it came.
        encrypted_content: String,
    },
}

impl OutputItem {
    /// The call id, for items that are tool calls.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Self::Message { .. } | Self::Reasoning { .. } | Self::Compaction { .. } => None,
            Self::FunctionCall { call_id, .. }
            | Self::ShellCall { call_id, .. }
            | Self::CustomToolCall { call_id, .. }
            | Self::ApplyPatchCall { call_id, .. } => Some(call_id),
        }
    }

    /// The item as the wire sees it: a function call (name, JSON arguments), a freeform call
    /// (name, input), or neither.
    pub(crate) fn tool_call(&self) -> Option<ToolCall<'_>> {
        match self {
            Self::Message { .. } | Self::Reasoning { .. } | Self::Compaction { .. } => None,
            Self::FunctionCall {
                call_id,
                name,
                arguments,
            } => Some(ToolCall::Function {
                call_id,
                name: name.clone(),
                arguments: arguments.clone(),
            }),
            Self::ShellCall {
                call_id,
                command,
                workdir,
                timeout_ms,
            } => {
                let mut args = serde_json::Map::new();
                args.insert("command".into(), serde_json::json!(command));
                if let Some(workdir) = workdir {
                    args.insert("workdir".into(), serde_json::json!(workdir));
                }
                if let Some(timeout_ms) = timeout_ms {
                    args.insert("timeout_ms".into(), serde_json::json!(timeout_ms));
                }
                Some(ToolCall::Function {
                    call_id,
                    name: "shell".into(),
                    arguments: serde_json::Value::Object(args).to_string(),
                })
            }
            Self::CustomToolCall {
                call_id,
                name,
                input,
            } => Some(ToolCall::Custom {
                call_id,
                name,
                input,
            }),
            Self::ApplyPatchCall { call_id, patch } => Some(ToolCall::Custom {
                call_id,
                name: "apply_patch",
                input: patch,
            }),
        }
    }
}

/// A tool call reduced to what goes on the wire.
pub(crate) enum ToolCall<'a> {
    /// `function_call`: arguments are JSON text.
    Function {
        call_id: &'a str,
        name: String,
        arguments: String,
    },
    /// `custom_tool_call`: freeform input.
    Custom {
        call_id: &'a str,
        name: &'a str,
        input: &'a str,
    },
}

fn arguments_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(match value {
        serde_json::Value::String(text) => text,
        other => other.to_string(),
    })
}

/// Token usage reported in `response.completed` (and the chat usage chunk).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// `input_tokens`.
    pub input_tokens: u64,
    /// `input_tokens_details.cached_tokens`.
    pub cached_tokens: u64,
    /// `output_tokens`.
    pub output_tokens: u64,
    /// `output_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: u64,
}

impl Usage {
    /// `total_tokens`: input plus output.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// One scripted reply: the items of one model response, plus how to misbehave while sending it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Turn {
    /// The output items, in order.
    pub items: Vec<OutputItem>,
    /// A fault to inject into this reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// A pause before each event after the first, to make streaming observable.
    #[serde(
        rename = "event_delay_ms",
        with = "crate::mock::duration_ms::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub event_delay: Option<Duration>,
    /// The usage to report; estimated from the sizes of request and reply when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// A reply recorded from a real server: each entry is sent verbatim as one SSE frame's
    /// `data:` (`[DONE]` included only if listed), instead of rendering `items`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub raw_frames: Vec<String>,
    /// Extra HTTP headers on the reply (rate-limit headers, say).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
}

impl Turn {
    /// A turn that outputs `items` and completes normally.
    pub fn new(items: impl IntoIterator<Item = OutputItem>) -> Self {
        Self {
            items: items.into_iter().collect(),
            ..Self::default()
        }
    }

    /// A turn that fails with `fault` and no items (e.g. an HTTP 429).
    pub fn failing(fault: Fault) -> Self {
        Self::default().with_fault(fault)
    }

    /// Injects `fault` into this turn.
    pub fn with_fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// Waits `delay` before each event after the first.
    pub fn with_event_delay(mut self, delay: Duration) -> Self {
        self.event_delay = Some(delay);
        self
    }

    /// A reply sent as these SSE `data:` payloads, verbatim and in order (a stream recorded
    /// from a real server, quirks included); a frame that starts with `:` is sent as an SSE
    /// comment line instead (a gateway's keep-alive).
    pub fn raw(frames: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            raw_frames: frames.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Adds an HTTP header to the reply.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Reports `usage` instead of the estimate.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// A whole script: the turns served in order, and the model name to advertise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ScriptFile")]
pub struct Script {
    /// The model id listed by `GET /models`; `mock-model` when absent.
    pub model: Option<String>,
    /// The turns, served one per model request.
    pub turns: Vec<Turn>,
}

/// The JSON file forms: a bare array of turns, or an object with `turns` (and `model`).
#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Turns(Vec<Turn>),
    Full {
        #[serde(default)]
        model: Option<String>,
        turns: Vec<Turn>,
    },
}

impl From<ScriptFile> for Script {
    fn from(file: ScriptFile) -> Self {
        match file {
            ScriptFile::Turns(turns) => Self { model: None, turns },
            ScriptFile::Full { model, turns } => Self { model, turns },
        }
    }
}

impl Script {
    /// A script of `turns`.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self {
            model: None,
            turns: turns.into_iter().collect(),
        }
    }

    /// Parses a script from JSON text in the format the crate docs describe.
    pub fn from_json(text: &str) -> Result<Self> {
        // Parse strictly per turn first so errors point at the turn, not the untagged wrapper.
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|source| Error::ParseScript { path: None, source })?;
        let turns_value = match &value {
            serde_json::Value::Object(map) => map.get("turns").cloned(),
            serde_json::Value::Array(_) => Some(value.clone()),
            _ => None,
        };
        let turns: Vec<Turn> = match turns_value {
            Some(turns) => serde_json::from_value(turns),
            None => serde_json::from_value(value.clone()),
        }
        .map_err(|source| Error::ParseScript { path: None, source })?;
        let model = value
            .get("model")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        Ok(Self { model, turns })
    }

    /// Reads and parses a JSON script file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::ReadScript {
            path: path.to_owned(),
            source,
        })?;
        Self::from_json(&text).map_err(|err| match err {
            Error::ParseScript { source, .. } => Error::ParseScript {
                path: Some(path.to_owned()),
                source,
            },
            other => other,
        })
    }
}

/// An assistant message.
pub fn assistant_message(text: impl Into<String>) -> OutputItem {
    OutputItem::Message { text: text.into() }
}

/// A reasoning item with summary `text`.
pub fn reasoning(text: impl Into<String>) -> OutputItem {
    OutputItem::Reasoning { text: text.into() }
}

/// A `function_call` of tool `name`; `arguments` is JSON text.
pub fn function_call(
    call_id: impl Into<String>,
    name: impl Into<String>,
    arguments: impl Into<String>,
) -> OutputItem {
    OutputItem::FunctionCall {
        call_id: call_id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// A call of the `shell` tool running `argv`.
pub fn shell_call(
    call_id: impl Into<String>,
    argv: impl IntoIterator<Item = impl Into<String>>,
) -> OutputItem {
    OutputItem::ShellCall {
        call_id: call_id.into(),
        command: argv.into_iter().map(Into::into).collect(),
        workdir: None,
        timeout_ms: None,
    }
}

/// A call of the `exec_command` tool; `args` is its JSON arguments object (`cmd` and any of
/// `tty`, `yield_time_ms`, `max_output_tokens`, ...).
pub fn exec_command_call(call_id: impl Into<String>, args: serde_json::Value) -> OutputItem {
    function_call(call_id, "exec_command", args.to_string())
}

/// A call of the `write_stdin` tool: `chars` to session `session_id` (empty to poll), waiting
/// up to `yield_time_ms` for output.
pub fn write_stdin_call(
    call_id: impl Into<String>,
    session_id: i64,
    chars: &str,
    yield_time_ms: u64,
) -> OutputItem {
    let args = serde_json::json!({
        "session_id": session_id,
        "chars": chars,
        "yield_time_ms": yield_time_ms,
    });
    function_call(call_id, "write_stdin", args.to_string())
}

/// A remote compaction's answer: a `compaction` item with `encrypted_content`.
pub fn compaction(encrypted_content: impl Into<String>) -> OutputItem {
    OutputItem::Compaction {
        encrypted_content: encrypted_content.into(),
    }
}

/// A freeform `apply_patch` call carrying `patch`.
pub fn apply_patch_call(call_id: impl Into<String>, patch: impl Into<String>) -> OutputItem {
    OutputItem::ApplyPatchCall {
        call_id: call_id.into(),
        patch: patch.into(),
    }
}

/// A `custom_tool_call` of freeform tool `name` with `input`.
pub fn custom_tool_call(
    call_id: impl Into<String>,
    name: impl Into<String>,
    input: impl Into<String>,
) -> OutputItem {
    OutputItem::CustomToolCall {
        call_id: call_id.into(),
        name: name.into(),
        input: input.into(),
    }
}
