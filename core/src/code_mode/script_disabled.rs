//! Scripts in a build without the `code-mode` feature: there is no engine, so no model is
//! driven in code mode and nothing starts one. The handle's shape matches the engine's so the
//! rest of code mode compiles the same.

use tokio::sync::mpsc;

use super::script_protocol::{HostReply, ScriptEvent, ScriptStart};

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
