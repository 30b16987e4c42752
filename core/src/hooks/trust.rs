//! Which hooks the user has reviewed. A hook runs only once its definition is trusted: the
//! user's `config.toml` records, per hook key, the hash of the definition they accepted
//! (`[hooks.state."KEY"] trusted_hash = "sha256:…"`, optionally `enabled = false`). A hook whose
//! definition changed since is `modified` and held back until trusted again. Keys and hashes
//! are computed as Codex computes them, so a trust given in either program holds in both.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::config::DefinedHook;

/// Whether a hook may run without the user's review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustStatus {
    /// Never reviewed.
    Untrusted,
    /// Reviewed in exactly this form.
    Trusted,
    /// Reviewed, but its definition changed since.
    Modified,
}

impl TrustStatus {
    /// The app-server's name for it.
    pub fn wire_name(self) -> &'static str {
        match self {
            Self::Untrusted => "untrusted",
            Self::Trusted => "trusted",
            Self::Modified => "modified",
        }
    }
}

/// What the user's config says about one hook.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HookState {
    pub trusted_hash: Option<String>,
    pub enabled: Option<bool>,
}

/// `<source path>:<event>:<group>:<handler>`: the name trust is recorded under.
pub(crate) fn hook_key(source_path: &Path, hook: &DefinedHook) -> String {
    format!(
        "{}:{}:{}:{}",
        source_path.display(),
        hook.event.snake_name(),
        hook.group_index,
        hook.handler_index
    )
}

/// `sha256:<hex>` of the hook's definition in canonical form (sorted keys, compact): its
/// event, its matcher when the event uses one, and the normalised handler. The file it is
/// in and its position are not part of it.
pub(crate) fn definition_hash(hook: &DefinedHook) -> String {
    // Keys inserted in sorted order, so the text is canonical whichever map serde_json uses.
    let mut handler = serde_json::Map::new();
    handler.insert("async".into(), hook.handler.is_async.into());
    handler.insert("command".into(), hook.handler.command.clone().into());
    if let Some(message) = &hook.handler.status_message {
        handler.insert("statusMessage".into(), message.clone().into());
    }
    handler.insert("timeout".into(), hook.handler.timeout_secs.into());
    handler.insert("type".into(), "command".into());
    let mut root = serde_json::Map::new();
    root.insert("event_name".into(), hook.event.snake_name().into());
    root.insert(
        "hooks".into(),
        serde_json::Value::Array(vec![serde_json::Value::Object(handler)]),
    );
    if let Some(matcher) = &hook.matcher {
        root.insert("matcher".into(), matcher.clone().into());
    }
    let text = serde_json::Value::Object(root).to_string();
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::from("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The `[hooks.state]` table of a config file's text.
pub(crate) fn read_states(config_text: &str) -> BTreeMap<String, HookState> {
    let Ok(table) = config_text.parse::<toml::Table>() else {
        return BTreeMap::new();
    };
    let Some(states) = table
        .get("hooks")
        .and_then(|hooks| hooks.get("state"))
        .and_then(toml::Value::as_table)
    else {
        return BTreeMap::new();
    };
    states
        .iter()
        .map(|(key, value)| {
            let state = HookState {
                trusted_hash: value
                    .get("trusted_hash")
                    .and_then(toml::Value::as_str)
                    .map(str::to_string),
                enabled: value.get("enabled").and_then(toml::Value::as_bool),
            };
            (key.clone(), state)
        })
        .collect()
}

/// The trust status of a hook whose definition hashes to `current`.
pub(crate) fn status(state: Option<&HookState>, current: &str) -> TrustStatus {
    match state.and_then(|state| state.trusted_hash.as_deref()) {
        None => TrustStatus::Untrusted,
        Some(hash) if hash == current => TrustStatus::Trusted,
        Some(_) => TrustStatus::Modified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::config::CommandHandler;
    use crate::hooks::event::HookEvent;
    use pretty_assertions::assert_eq;

    fn hook(matcher: Option<&str>) -> DefinedHook {
        DefinedHook {
            event: HookEvent::PreToolUse,
            matcher: matcher.map(str::to_string),
            group_index: 0,
            handler_index: 0,
            handler: CommandHandler {
                command: "X".to_string(),
                timeout_secs: 600,
                is_async: false,
                status_message: None,
                additional_context_limit: None,
                env: Vec::new(),
            },
        }
    }

    #[test]
    fn hashes_as_codex_does() {
        // The value Codex 0.169 reports as `currentHash` for this definition.
        assert_eq!(
            definition_hash(&hook(None)),
            "sha256:0932709d126fdeaa95f91efaab1b7ff6bf93e1950763cea9010147acda3b04f7"
        );
        assert_ne!(
            definition_hash(&hook(Some("Bash"))),
            definition_hash(&hook(None))
        );
        assert_eq!(
            hook_key(Path::new("/h/hooks.json"), &hook(None)),
            "/h/hooks.json:pre_tool_use:0:0"
        );
    }

    #[test]
    fn reads_trust_records() {
        let states = read_states(
            "[hooks.state.\"/h/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:ab\"\nenabled = false\n",
        );
        let state = states.get("/h/hooks.json:stop:0:0");
        assert_eq!(status(state, "sha256:ab"), TrustStatus::Trusted);
        assert_eq!(status(state, "sha256:cd"), TrustStatus::Modified);
        assert_eq!(status(None, "sha256:ab"), TrustStatus::Untrusted);
        assert_eq!(state.and_then(|s| s.enabled), Some(false));
    }
}
