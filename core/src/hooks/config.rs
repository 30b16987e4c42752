//! Hook definitions as users write them, in a `hooks.json` or as `[hooks]` tables in a
//! `config.toml` (the same shape either way): event name → matcher groups → handlers.
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash",
//!   "hooks": [{"type": "command", "command": "/abs/check.sh", "timeout": 30}]}]}}
//! ```
//!
//! As in Codex: a `hooks.json` whose root holds anything but `hooks` and `description` is
//! refused whole; unknown event names are skipped; unknown keys inside groups and handlers are
//! ignored; a group whose matcher is not a valid regex is dropped with a warning.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::event::HookEvent;

/// Seconds a hook may run when its definition does not say.
pub(crate) const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// A command handler, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandHandler {
    /// Run with `bash -c`.
    pub command: String,
    /// Seconds before it is killed (at least 1).
    pub timeout_secs: u64,
    /// Fire and forget: its output is ignored and nothing waits for it.
    pub is_async: bool,
    /// What a client shows while it runs.
    pub status_message: Option<String>,
    /// Tokens of `additionalContext` put into the history whole (`None`: 2,500; `0`: all).
    pub additional_context_limit: Option<u64>,
    /// Variables set for it besides the session's (a plugin's `CLAUDE_PLUGIN_ROOT`, …).
    pub env: Vec<(String, String)>,
}

/// One handler as defined, with where it sits in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DefinedHook {
    pub event: HookEvent,
    pub matcher: Option<String>,
    pub group_index: usize,
    pub handler_index: usize,
    pub handler: CommandHandler,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HooksFile {
    #[serde(default)]
    hooks: BTreeMap<String, Vec<GroupConfig>>,
    #[serde(default)]
    #[expect(dead_code, reason = "accepted as Codex accepts it; nothing reads it")]
    description: Option<String>,
}

#[derive(Deserialize)]
struct GroupConfig {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<HandlerConfig>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum HandlerConfig {
    Command {
        command: String,
        #[serde(default)]
        timeout: Option<u64>,
        #[serde(default, rename = "async")]
        is_async: bool,
        #[serde(default, rename = "statusMessage")]
        status_message: Option<String>,
        #[serde(default, rename = "additionalContextLimit")]
        additional_context_limit: Option<u64>,
    },
    McpTool {},
    Prompt {},
    Agent {},
}

/// Reads the hooks of one file's `hooks` value (`{"hooks": {...}}` as a whole for a
/// `hooks.json`, the `[hooks]` table for a `config.toml`); problems go to `warnings`.
pub(crate) fn parse_hooks(
    root: serde_json::Value,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Vec<DefinedHook> {
    let file: HooksFile = match serde_json::from_value(root) {
        Ok(file) => file,
        Err(err) => {
            warnings.push(format!(
                "failed to parse hooks config {}: {err}",
                path.display()
            ));
            return Vec::new();
        }
    };
    let mut defined = Vec::new();
    for (name, groups) in file.hooks {
        let Some(event) = HookEvent::from_config_name(&name) else {
            continue;
        };
        for (group_index, group) in groups.into_iter().enumerate() {
            let matcher = if event.uses_matcher() {
                group.matcher
            } else {
                None
            };
            if let Some(pattern) = &matcher
                && let Err(err) = regex::Regex::new(pattern)
            {
                warnings.push(format!(
                    "invalid matcher {pattern:?} in {}: {err}",
                    path.display()
                ));
                continue;
            }
            for (handler_index, handler) in group.hooks.into_iter().enumerate() {
                match handler {
                    HandlerConfig::Command {
                        command,
                        timeout,
                        is_async,
                        status_message,
                        additional_context_limit,
                    } => defined.push(DefinedHook {
                        event,
                        matcher: matcher.clone(),
                        group_index,
                        handler_index,
                        handler: CommandHandler {
                            command,
                            timeout_secs: timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
                            is_async,
                            status_message,
                            additional_context_limit,
                            env: Vec::new(),
                        },
                    }),
                    HandlerConfig::McpTool {}
                    | HandlerConfig::Prompt {}
                    | HandlerConfig::Agent {} => {
                        warnings.push(format!(
                            "skipping a {name} hook in {}: only `command` hooks are supported",
                            path.display()
                        ));
                    }
                }
            }
        }
    }
    defined
}

/// Whether `matcher` (a regex over the whole name; none, `""` and `*` match anything)
/// matches `name`.
pub(crate) fn matches(matcher: Option<&str>, name: &str) -> bool {
    match matcher {
        None | Some("" | "*") => true,
        Some(pattern) => {
            regex::Regex::new(&format!("^(?:{pattern})$")).is_ok_and(|regex| regex.is_match(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn reads_groups_and_handlers_and_reports_problems() {
        let mut warnings = Vec::new();
        let hooks = parse_hooks(
            json!({"hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "a", "timeout": 0, "extra": 1}]},
                    {"matcher": "(", "hooks": [{"type": "command", "command": "b"}]}
                ],
                "Stop": [{"matcher": "ignored", "hooks": [{"type": "prompt"}, {"type": "command", "command": "c", "async": true}]}],
                "stop": [{"hooks": [{"type": "command", "command": "never"}]}]
            }}),
            Path::new("/h/hooks.json"),
            &mut warnings,
        );
        type Row<'a> = (HookEvent, Option<&'a str>, usize, usize, &'a str, u64, bool);
        let summary: Vec<Row<'_>> = hooks
            .iter()
            .map(|h| {
                (
                    h.event,
                    h.matcher.as_deref(),
                    h.group_index,
                    h.handler_index,
                    h.handler.command.as_str(),
                    h.handler.timeout_secs,
                    h.handler.is_async,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (HookEvent::PreToolUse, Some("Bash"), 0, 0, "a", 1, false),
                (HookEvent::Stop, None, 0, 1, "c", 600, true),
            ]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("invalid matcher"), "{warnings:?}");
        assert!(warnings[1].contains("only `command` hooks"), "{warnings:?}");

        let mut warnings = Vec::new();
        let none = parse_hooks(
            json!({"$schema": "x", "hooks": {}}),
            Path::new("/h/hooks.json"),
            &mut warnings,
        );
        assert!(none.is_empty());
        assert!(
            warnings[0].contains("failed to parse hooks config"),
            "{warnings:?}"
        );
    }

    #[test]
    fn matchers_match_whole_names() {
        assert!(matches(None, "Bash"));
        assert!(matches(Some("*"), "Bash"));
        assert!(matches(Some("Ba.*"), "Bash"));
        assert!(!matches(Some("B"), "Bash"));
        assert!(matches(Some("(?i)bash"), "Bash"));
        assert!(matches(Some("Bash|apply_patch"), "apply_patch"));
    }
}
