//! How `keel acp` speaks to editors beyond ACP v1.

/// How the agent speaks to editors beyond ACP v1.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcpOptions {
    /// Speak the draft ACP v2 to an editor that asks for it at `initialize` (the draft may
    /// still change; editors that ask for v1 get v1 either way).
    pub protocol_v2: bool,
}
