//! What a hook's run means, read as Codex reads it. Exit 0 with nothing printed: done. Exit 0
//! with JSON on stdout: its fields decide (`decision: "block"` with a `reason`, `continue:
//! false` with a `stopReason`, `systemMessage` for the user, `hookSpecificOutput` with
//! `additionalContext`, `permissionDecision` and `updatedInput`). Exit 0 with other text: context
//! for the events that take plain text. Exit 2 with a reason on stderr: block, where the event
//! can be blocked. Anything else failed, and a failed hook is ignored: it never stops a turn.

use serde::Deserialize;

use super::event::HookEvent;
use super::run::{ProcessEnd, ProcessRun};

/// The result of one hook run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HookOutcome {
    /// Why the hook failed (it is then ignored).
    pub error: Option<String>,
    /// The hook blocked what the event is about, with this reason.
    pub block: Option<String>,
    /// The hook asked to stop, with this reason.
    pub stop: Option<String>,
    /// Context for the model.
    pub context: Option<String>,
    /// A replacement for the tool's input (PreToolUse only).
    pub updated_input: Option<serde_json::Value>,
    /// A message for the user, never shown to the model.
    pub warning: Option<String>,
    /// A `PermissionRequest` answer.
    pub permission: Option<PermissionAnswer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HookJson {
    #[serde(default, rename = "continue")]
    keep_going: Option<bool>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    system_message: Option<String>,
    #[serde(default)]
    decision: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    hook_specific_output: Option<SpecificOutput>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecificOutput {
    #[serde(default)]
    additional_context: Option<String>,
    #[serde(default)]
    permission_decision: Option<String>,
    #[serde(default)]
    permission_decision_reason: Option<String>,
    #[serde(default)]
    updated_input: Option<serde_json::Value>,
    #[serde(default)]
    decision: Option<PermissionDecisionJson>,
}

#[derive(Deserialize)]
struct PermissionDecisionJson {
    behavior: String,
    #[serde(default)]
    message: Option<String>,
}

/// Whether hooks of `event` can block it.
pub(crate) fn can_block(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::PermissionRequest
            | HookEvent::PostToolUse
            | HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::SubagentStop
    )
}

/// Whether plain text on stdout is context for the model at `event`.
fn takes_plain_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
}

/// Reads `run` as a hook of `event`.
pub(crate) fn interpret(event: HookEvent, run: &ProcessRun) -> HookOutcome {
    let failed = |message: String| HookOutcome {
        error: Some(message),
        ..HookOutcome::default()
    };
    match &run.end {
        ProcessEnd::NotStarted(err) => failed(format!("hook could not start: {err}")),
        ProcessEnd::TimedOut(after) => failed(format!("hook timed out after {}s", after.as_secs())),
        ProcessEnd::Exited(2) => {
            let reason = run.stderr.trim();
            if !can_block(event) {
                failed(if reason.is_empty() {
                    "hook exited with code 2".to_string()
                } else {
                    reason.to_string()
                })
            } else if reason.is_empty() {
                failed(format!(
                    "{} hook exited with code 2 but did not write a blocking reason to stderr",
                    event.config_name()
                ))
            } else if event == HookEvent::PermissionRequest {
                HookOutcome {
                    permission: Some(PermissionAnswer::Deny(reason.to_string())),
                    ..HookOutcome::default()
                }
            } else {
                HookOutcome {
                    block: Some(reason.to_string()),
                    ..HookOutcome::default()
                }
            }
        }
        ProcessEnd::Exited(0) => {
            let stdout = run.stdout.trim();
            if stdout.is_empty() {
                HookOutcome::default()
            } else if stdout.starts_with('{') {
                from_json(event, stdout)
            } else if takes_plain_context(event) {
                HookOutcome {
                    context: Some(stdout.to_string()),
                    ..HookOutcome::default()
                }
            } else {
                HookOutcome::default()
            }
        }
        ProcessEnd::Exited(code) => failed(format!("hook exited with code {code}")),
    }
}

fn from_json(event: HookEvent, stdout: &str) -> HookOutcome {
    // The model-request and session-end events take no answer.
    if matches!(
        event,
        HookEvent::PreModelRequest | HookEvent::PostModelRequest | HookEvent::SessionEnd
    ) {
        return HookOutcome::default();
    }
    let json: HookJson = match serde_json::from_str(stdout) {
        Ok(json) => json,
        Err(err) => {
            return HookOutcome {
                error: Some(format!(
                    "invalid {} hook JSON output: {err}",
                    event.config_name()
                )),
                ..HookOutcome::default()
            };
        }
    };
    let mut outcome = HookOutcome {
        warning: json.system_message,
        ..HookOutcome::default()
    };
    if json.keep_going == Some(false) {
        outcome.stop = Some(json.stop_reason.unwrap_or_default());
    }
    if json.decision.as_deref() == Some("block") {
        match json.reason.filter(|reason| !reason.trim().is_empty()) {
            Some(reason) if can_block(event) => outcome.block = Some(reason),
            _ => {
                outcome.error = Some(format!(
                    "invalid {} hook JSON output: `decision: block` needs a `reason` and an \
                     event that can be blocked",
                    event.config_name()
                ));
            }
        }
    }
    if let Some(specific) = json.hook_specific_output {
        if let Some(decision) = &specific.decision {
            match (event, decision.behavior.as_str()) {
                (HookEvent::PermissionRequest, "allow") => {
                    outcome.permission = Some(PermissionAnswer::Allow);
                }
                (HookEvent::PermissionRequest, "deny") => {
                    outcome.permission = Some(PermissionAnswer::Deny(
                        decision.message.clone().unwrap_or_default(),
                    ));
                }
                (_, other) => {
                    outcome.error = Some(format!("unsupported decision behavior `{other}`"));
                }
            }
        }
        outcome.context = specific
            .additional_context
            .filter(|context| !context.trim().is_empty());
        match specific.permission_decision.as_deref() {
            Some("deny") if event == HookEvent::PreToolUse => {
                match specific
                    .permission_decision_reason
                    .filter(|reason| !reason.trim().is_empty())
                {
                    Some(reason) => outcome.block = Some(reason),
                    None => {
                        outcome.error = Some(
                            "`permissionDecision: deny` needs a `permissionDecisionReason`".into(),
                        );
                    }
                }
            }
            Some("allow") if event == HookEvent::PreToolUse => match specific.updated_input {
                Some(input) => outcome.updated_input = Some(input),
                None => {
                    outcome.error = Some(
                        "`permissionDecision: allow` is only supported with `updatedInput`".into(),
                    );
                }
            },
            Some(other) => {
                outcome.error = Some(format!("unsupported permissionDecision `{other}`"));
            }
            None => {}
        }
    }
    outcome
}

/// A `PermissionRequest` hook's answer for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PermissionAnswer {
    /// Approve without asking.
    Allow,
    /// Refuse without asking, with this message.
    Deny(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::time::Duration;

    fn run(end: ProcessEnd, stdout: &str, stderr: &str) -> ProcessRun {
        ProcessRun {
            end,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn exit_codes_and_json() {
        let pre = HookEvent::PreToolUse;
        assert_eq!(
            interpret(pre, &run(ProcessEnd::Exited(0), "", "")),
            HookOutcome::default()
        );
        assert_eq!(
            interpret(pre, &run(ProcessEnd::Exited(2), "", "no rm -rf\n")).block,
            Some("no rm -rf".to_string())
        );
        assert!(
            interpret(pre, &run(ProcessEnd::Exited(2), "", ""))
                .error
                .is_some()
        );
        assert_eq!(
            interpret(pre, &run(ProcessEnd::Exited(7), "", "")).error,
            Some("hook exited with code 7".to_string())
        );
        assert_eq!(
            interpret(
                pre,
                &run(ProcessEnd::TimedOut(Duration::from_secs(3)), "", "")
            )
            .error,
            Some("hook timed out after 3s".to_string())
        );
        let denied = interpret(
            pre,
            &run(
                ProcessEnd::Exited(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"nope","additionalContext":"ctx"}}"#,
                "",
            ),
        );
        assert_eq!(
            (denied.block.as_deref(), denied.context.as_deref()),
            (Some("nope"), Some("ctx"))
        );
        let rewritten = interpret(
            pre,
            &run(
                ProcessEnd::Exited(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"echo x"}}}"#,
                "",
            ),
        );
        assert_eq!(
            rewritten.updated_input,
            Some(serde_json::json!({"command": "echo x"}))
        );
        let prompt = interpret(
            HookEvent::UserPromptSubmit,
            &run(ProcessEnd::Exited(0), "remember X\n", ""),
        );
        assert_eq!(prompt.context.as_deref(), Some("remember X"));
        let ignored = interpret(pre, &run(ProcessEnd::Exited(0), "plain text", ""));
        assert_eq!(ignored, HookOutcome::default());
        assert!(
            interpret(pre, &run(ProcessEnd::Exited(0), "{not json", ""))
                .error
                .is_some()
        );
        // An event that cannot be blocked: exit 2 is a failure.
        assert!(
            interpret(HookEvent::PreCompact, &run(ProcessEnd::Exited(2), "", "x"))
                .error
                .is_some()
        );
    }
}
