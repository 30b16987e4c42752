//! Scripts in a build without the `code-mode` feature: there is no engine, so no model is
//! driven in code mode and nothing starts one. The types match the engine's so the rest of
//! code mode compiles the same.
#![expect(
    dead_code,
    reason = "the engine's types, kept so code mode compiles; nothing makes them here"
)]

use tokio::sync::mpsc;

/// What a script is started with.
#[derive(Debug, Clone)]
pub(super) struct ScriptStart {
    pub(super) source: String,
    pub(super) tools: Vec<(String, String)>,
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
    Completed,
    Failed(String),
    Terminated,
}

/// What a script asks of its host.
#[derive(Debug)]
pub(super) enum ScriptEvent {
    Text(String),
    Image(String),
    Notify(String),
    YieldControl,
    Store(String, serde_json::Value),
    ToolCall {
        id: u64,
        name: String,
        input: NestedInput,
    },
    Finished(ScriptEnd),
}

/// What the host answers.
#[derive(Debug)]
pub(super) enum HostReply {
    ToolResult {
        id: u64,
        result: Result<NestedResult, String>,
    },
}

/// Never made: [`start`] always fails.
pub(super) struct ScriptHandle {
    pub(super) events: mpsc::UnboundedReceiver<ScriptEvent>,
}

/// Never made either.
#[derive(Clone)]
pub(super) struct ScriptStopper;

impl ScriptStopper {
    pub(super) fn terminate(&self) {}
}

impl ScriptHandle {
    pub(super) fn reply(&self, _reply: HostReply) {}

    pub(super) fn stopper(&self) -> ScriptStopper {
        ScriptStopper
    }
}

/// Fails: this build has no engine.
pub(super) fn start(start: ScriptStart) -> std::io::Result<ScriptHandle> {
    let _ = (start.source, start.tools, start.stored);
    Err(std::io::Error::other(
        "this build of Keel has no JavaScript engine (the `code-mode` feature is off)",
    ))
}
