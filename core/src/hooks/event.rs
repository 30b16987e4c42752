//! The lifecycle events a hook can run at, with the names each place uses for them: config
//! files (`PreToolUse`), trust keys and hashes (`pre_tool_use`), run ids (`pre-tool-use`) and
//! the app-server (`preToolUse`).

/// A moment in a session's life where hooks run, in Codex's canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// Before each model request.
    PreModelRequest,
    /// After each model request.
    PostModelRequest,
    /// Before a tool call runs; may block it, add context or rewrite its input.
    PreToolUse,
    /// When the user would be asked to approve something.
    PermissionRequest,
    /// After a tool call ran; may replace what the model sees or add context.
    PostToolUse,
    /// Before the history is compacted.
    PreCompact,
    /// After the history was compacted.
    PostCompact,
    /// When a session starts, resumes or restarts after a compaction.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// When the user submits a prompt; may drop it or add context.
    UserPromptSubmit,
    /// When a sub-agent starts.
    SubagentStart,
    /// When a sub-agent's turn ends.
    SubagentStop,
    /// When a turn is about to end; may make it go on.
    Stop,
    /// When a turn is interrupted.
    Interrupt,
}

impl HookEvent {
    /// Every event, in canonical order.
    pub const ALL: [HookEvent; 14] = [
        Self::PreModelRequest,
        Self::PostModelRequest,
        Self::PreToolUse,
        Self::PermissionRequest,
        Self::PostToolUse,
        Self::PreCompact,
        Self::PostCompact,
        Self::SessionStart,
        Self::SessionEnd,
        Self::UserPromptSubmit,
        Self::SubagentStart,
        Self::SubagentStop,
        Self::Stop,
        Self::Interrupt,
    ];

    /// The name in config files and in the `hook_event_name` a hook receives.
    pub fn config_name(self) -> &'static str {
        match self {
            Self::PreModelRequest => "PreModelRequest",
            Self::PostModelRequest => "PostModelRequest",
            Self::PreToolUse => "PreToolUse",
            Self::PermissionRequest => "PermissionRequest",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::PostCompact => "PostCompact",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
            Self::Stop => "Stop",
            Self::Interrupt => "Interrupt",
        }
    }

    /// The event named `name` in a config file (exact PascalCase, as Codex reads them).
    pub fn from_config_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|event| event.config_name() == name)
    }

    /// `pre_tool_use`: in trust keys and hashes.
    pub fn snake_name(self) -> String {
        separated(self.config_name(), '_')
    }

    /// `pre-tool-use`: in run ids.
    pub fn kebab_name(self) -> String {
        separated(self.config_name(), '-')
    }

    /// `preToolUse`: on the app-server wire.
    pub fn wire_name(self) -> String {
        let name = self.config_name();
        let mut chars = name.chars();
        chars
            .next()
            .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
            .unwrap_or_default()
    }

    /// Whether groups of this event filter by `matcher` (the others ignore it).
    pub fn uses_matcher(self) -> bool {
        !matches!(
            self,
            Self::PreModelRequest
                | Self::PostModelRequest
                | Self::UserPromptSubmit
                | Self::Stop
                | Self::Interrupt
        )
    }

    /// Position in the canonical order.
    pub fn rank(self) -> usize {
        Self::ALL
            .iter()
            .position(|event| *event == self)
            .unwrap_or(0)
    }
}

fn separated(pascal: &str, separator: char) -> String {
    let mut out = String::with_capacity(pascal.len() + 4);
    for (n, c) in pascal.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if n > 0 {
                out.push(separator);
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_spelling() {
        let e = HookEvent::PreToolUse;
        assert_eq!(
            (
                e.config_name(),
                e.snake_name(),
                e.kebab_name(),
                e.wire_name()
            ),
            (
                "PreToolUse",
                "pre_tool_use".into(),
                "pre-tool-use".into(),
                "preToolUse".into()
            )
        );
        assert_eq!(HookEvent::from_config_name("Stop"), Some(HookEvent::Stop));
        assert_eq!(HookEvent::from_config_name("stop"), None);
        assert_eq!(HookEvent::Interrupt.rank(), 13);
    }
}
