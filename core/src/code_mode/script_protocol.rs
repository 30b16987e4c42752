//! What passes between a code-mode script and its host: how a script starts, what it asks
//! (output, stored values, tool calls), how it ends, and the host's answers. The engine
//! ([`super::script`]) and the build without one share these types.
#![cfg_attr(
    not(feature = "code-mode"),
    expect(
        dead_code,
        reason = "without the engine nothing starts a script, so nothing makes these"
    )
)]

/// What a script is started with.
#[derive(Debug, Clone)]
pub(super) struct ScriptStart {
    /// The module source.
    pub(super) source: String,
    /// Nested tools: the JavaScript name on `tools`, and the description for `ALL_TOOLS`.
    pub(super) tools: Vec<(String, String)>,
    /// Values earlier cells stored, as a JSON object.
    pub(super) stored: serde_json::Map<String, serde_json::Value>,
}

/// What a nested tool was given: a string, or an object as JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NestedInput {
    /// A string (a freeform tool's input).
    Text(String),
    /// An object, as JSON text (a function tool's arguments).
    Json(String),
}

/// What a nested tool returned: a string, or a value as JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NestedResult {
    /// Text, as the tool wrote it.
    Text(String),
    /// A value, as JSON text.
    Json(String),
}

/// How a script ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ScriptEnd {
    /// It ran to its end, or called `exit()`.
    Completed,
    /// It threw, or could not be compiled: the error as the model reads it.
    Failed(String),
    /// The host stopped it.
    Terminated,
}

/// What a script asks of its host.
#[derive(Debug)]
pub(super) enum ScriptEvent {
    /// `text(...)`.
    Text(String),
    /// `image(...)`: a `data:` URL.
    Image(String),
    /// `notify(...)`.
    Notify(String),
    /// `yield_control()`.
    YieldControl,
    /// `store(key, value)`.
    Store(String, serde_json::Value),
    /// `tools.<name>(input)`: answer with [`HostReply::ToolResult`] and this id.
    ToolCall {
        id: u64,
        name: String,
        input: NestedInput,
    },
    /// The script is over; nothing follows.
    Finished(ScriptEnd),
}

/// What the host answers.
#[derive(Debug)]
pub(super) enum HostReply {
    /// The result of the call with this id (an error message rejects its promise).
    ToolResult {
        id: u64,
        result: Result<NestedResult, String>,
    },
}
