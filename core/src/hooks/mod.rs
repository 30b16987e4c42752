//! Hooks: commands the user configures to run at lifecycle events of a session, to block a
//! dangerous tool call, format files after a patch, add context to a prompt, or make a turn go
//! on. Compatible with Codex 0.169: the same files and shape (`hooks.json` or `[hooks]`), the
//! same JSON on stdin and meaning of exit codes and output, the same trust records (a hook
//! runs only once the user trusted its definition). Beyond Codex, a hook held back for lack
//! of trust is reported, not skipped in silence. `docs/hooks.md` has the facts.

mod config;
mod embedded;
mod event;
mod inventory;
mod outcome;
mod run;
mod spill;
mod trust;

use std::path::{Path, PathBuf};

pub use config::CommandHandler;
pub use embedded::{EmbeddedHook, HookCallback, HookMatcherError, HookResponse};
pub use event::HookEvent;
pub use inventory::{Hook, HookInventory, HookSource, load_hooks, plugin_hook_keys};
pub use trust::TrustStatus;

pub(crate) use outcome::PermissionAnswer;
use outcome::{HookOutcome, interpret};

/// What every hook of a session is told besides the event's own fields.
#[derive(Debug, Clone)]
pub(crate) struct HookSession {
    pub session_id: String,
    pub transcript_path: Option<PathBuf>,
    pub cwd: PathBuf,
    pub model: String,
    /// `bypassPermissions` when nothing is asked (approval `never`), else `default`.
    pub permission_mode: &'static str,
    pub bypass_trust: bool,
    /// Where long hook output is saved: under the user's Keel home, never a shared temp
    /// directory another user could have planted a link in.
    pub outputs_dir: PathBuf,
}

/// One hook's run, for reports to the client.
#[derive(Debug, Clone)]
pub(crate) struct HookRunReport {
    pub hook: Hook,
    pub outcome: HookOutcome,
    pub started_at: std::time::SystemTime,
    pub duration: std::time::Duration,
}

/// Seconds since the Unix epoch.
fn unix_secs(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The client's view of a run of `hook` (`outcome` is `None` while it runs).
pub(crate) fn run_summary(
    hook: &Hook,
    call_id: Option<&str>,
    started_at: std::time::SystemTime,
    finished: Option<(&HookOutcome, std::time::Duration)>,
) -> keel_protocol::app_server::HookRunSummary {
    use keel_protocol::app_server::{HookOutputEntry, HookRunSummary};
    let mut id = format!(
        "{}:{}:{}",
        hook.event.kebab_name(),
        hook.display_order,
        hook.source_path.display()
    );
    if let Some(call_id) = call_id {
        id.push(':');
        id.push_str(call_id);
    }
    let entry = |kind: &str, text: &str| HookOutputEntry {
        kind: kind.to_string(),
        text: text.to_string(),
    };
    let (status, entries, completed_at, duration_ms) = match finished {
        None => ("running", Vec::new(), None, None),
        Some((outcome, duration)) => {
            let mut entries = Vec::new();
            entries.extend(outcome.error.as_deref().map(|text| entry("error", text)));
            entries.extend(outcome.block.as_deref().map(|text| entry("feedback", text)));
            entries.extend(outcome.stop.as_deref().map(|text| entry("stop", text)));
            entries.extend(
                outcome
                    .context
                    .as_deref()
                    .map(|text| entry("context", text)),
            );
            entries.extend(
                outcome
                    .warning
                    .as_deref()
                    .map(|text| entry("warning", text)),
            );
            let status = if outcome.error.is_some() {
                "failed"
            } else if outcome.block.is_some() {
                "blocked"
            } else if outcome.stop.is_some() {
                "stopped"
            } else {
                "completed"
            };
            (
                status,
                entries,
                Some(unix_secs(started_at + duration)),
                Some(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)),
            )
        }
    };
    HookRunSummary {
        id,
        event_name: hook.event.wire_name(),
        handler_type: "command".to_string(),
        execution_mode: if hook.handler.is_async {
            "async"
        } else {
            "sync"
        }
        .to_string(),
        scope: if hook.event == HookEvent::SessionStart {
            "thread"
        } else {
            "turn"
        }
        .to_string(),
        source_path: hook.source_path.display().to_string(),
        source: Some(hook.source.wire_name().to_string()),
        display_order: u64::try_from(hook.display_order).unwrap_or(u64::MAX),
        status_message: hook.handler.status_message.clone(),
        started_at: unix_secs(started_at),
        completed_at,
        duration_ms,
        status: status.to_string(),
        entries,
    }
}

/// What the hooks of one event decided together.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventOutcome {
    /// The first `PermissionRequest` answer, in display order.
    pub permission: Option<PermissionAnswer>,
    /// The first block, in display order: its reason and which hook (`ORDER:PATH` for a
    /// user's hook, `embedded:NAME` for one in code).
    pub block: Option<(String, String)>,
    /// The first stop request's reason.
    pub stop: Option<String>,
    /// Context for the model, in display order.
    pub contexts: Vec<String>,
    /// The last replacement of the tool input.
    pub updated_input: Option<serde_json::Value>,
    /// Every synchronous run of a user's hook.
    pub runs: Vec<HookRunReport>,
    /// Failures and messages of the embedding program's hooks.
    pub embedded_warnings: Vec<String>,
}

impl EventOutcome {
    /// Warnings the user should see: failed hooks and their system messages.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for run in &self.runs {
            if let Some(error) = &run.outcome.error {
                out.push(format!(
                    "{} hook `{}` failed and was ignored: {error}",
                    run.hook.event.config_name(),
                    run.hook.handler.command
                ));
            }
            if let Some(message) = &run.outcome.warning {
                out.push(message.clone());
            }
        }
        out.extend(self.embedded_warnings.iter().cloned());
        out
    }
}

/// Runs the hooks of `event` that match `name` (all of them at once; fire-and-forget ones in
/// the background), with `fields` added to the common input.
pub(crate) async fn run_event(
    inventory: &HookInventory,
    session: &HookSession,
    event: HookEvent,
    name: Option<&str>,
    turn_id: Option<&str>,
    fields: serde_json::Value,
) -> EventOutcome {
    let hooks: Vec<Hook> = inventory
        .matching(event, name, session.bypass_trust)
        .cloned()
        .collect();
    let embedded: Vec<&EmbeddedHook> = inventory
        .embedded
        .iter()
        .filter(|hook| hook.applies(event, name))
        .collect();
    if hooks.is_empty() && embedded.is_empty() {
        return EventOutcome::default();
    }
    let input = hook_input(session, event, turn_id, fields);
    let cwd = session.cwd.clone();
    let mut waiting = Vec::new();
    for hook in hooks {
        if hook.handler.is_async {
            let input = input.clone();
            let cwd = cwd.clone();
            tokio::spawn(async move {
                let _ = run::run_command(&hook.handler, &input, &cwd).await;
            });
            continue;
        }
        let input = &input;
        let cwd = &cwd;
        waiting.push(async move {
            let started_at = std::time::SystemTime::now();
            let run = run::run_command(&hook.handler, input, cwd).await;
            let outcome = interpret(hook.event, &run);
            if let Some(error) = &outcome.error {
                tracing::warn!(hook = %hook.key, "{error}");
            }
            HookRunReport {
                hook,
                outcome,
                started_at,
                duration: run.duration,
            }
        });
    }
    let in_code = embedded.iter().map(|hook| {
        let input = input.clone();
        async move { (*hook, interpret(event, &hook.run(input).await)) }
    });
    let (runs, in_code) = futures::future::join(
        futures::future::join_all(waiting),
        futures::future::join_all(in_code),
    )
    .await;
    let mut combined = EventOutcome::default();
    let labelled = runs
        .iter()
        .map(|run| {
            (
                format!(
                    "{}:{}",
                    run.hook.display_order,
                    run.hook.source_path.display()
                ),
                &run.outcome,
                run.hook.handler.additional_context_limit,
            )
        })
        .chain(
            in_code
                .iter()
                .map(|(hook, outcome)| (format!("embedded:{}", hook.name()), outcome, None)),
        );
    for (label, outcome, context_limit) in labelled {
        if outcome.error.is_some() {
            continue;
        }
        if combined.block.is_none()
            && let Some(reason) = &outcome.block
        {
            combined.block = Some((reason.clone(), label));
        }
        if combined.stop.is_none() {
            combined.stop.clone_from(&outcome.stop);
        }
        combined.contexts.extend(
            outcome
                .context
                .clone()
                .map(|context| spill::fit_context(context, context_limit, &session.outputs_dir)),
        );
        if outcome.updated_input.is_some() {
            combined.updated_input.clone_from(&outcome.updated_input);
        }
        if combined.permission.is_none() {
            combined.permission.clone_from(&outcome.permission);
        }
    }
    combined.runs = runs;
    for (hook, outcome) in &in_code {
        if let Some(error) = &outcome.error {
            tracing::warn!(hook = %hook.name(), "{error}");
            combined.embedded_warnings.push(format!(
                "{} hook `{}` (in code) failed and was ignored: {error}",
                event.config_name(),
                hook.name()
            ));
        }
        combined.embedded_warnings.extend(outcome.warning.clone());
    }
    combined
}

fn hook_input(
    session: &HookSession,
    event: HookEvent,
    turn_id: Option<&str>,
    fields: serde_json::Value,
) -> serde_json::Value {
    let mut input = serde_json::json!({
        "session_id": session.session_id,
        "transcript_path": session.transcript_path,
        "cwd": session.cwd,
        "hook_event_name": event.config_name(),
        "model": session.model,
    });
    if let Some(map) = input.as_object_mut() {
        if let Some(turn_id) = turn_id {
            map.insert("turn_id".into(), turn_id.into());
        }
        if !matches!(
            event,
            HookEvent::PreModelRequest
                | HookEvent::PostModelRequest
                | HookEvent::PreCompact
                | HookEvent::PostCompact
                | HookEvent::SessionEnd
        ) {
            map.insert("permission_mode".into(), session.permission_mode.into());
        }
        if let serde_json::Value::Object(fields) = fields {
            map.extend(fields);
        }
    }
    input
}

/// What hooks see of a tool call: the name they match on and its input. Commands are `Bash`
/// with `{"command": "<the command line>"}`, as in Codex; other tools keep their name and
/// arguments.
pub(crate) fn tool_view(name: &str, arguments: &str) -> (String, serde_json::Value) {
    let args: serde_json::Value = serde_json::from_str(arguments)
        .unwrap_or_else(|_| serde_json::Value::String(arguments.to_string()));
    match name {
        "exec_command" => (
            "Bash".to_string(),
            serde_json::json!({"command": args.get("cmd").cloned().unwrap_or_default()}),
        ),
        "shell" | "local_shell" | "container.exec" => {
            let argv: Vec<String> = args
                .get("command")
                .and_then(serde_json::Value::as_array)
                .map(|argv| {
                    argv.iter()
                        .filter_map(|part| part.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let command = match argv.as_slice() {
                [shell, flag, script]
                    if flag.starts_with('-') && flag.ends_with('c') && shell.contains("sh") =>
                {
                    script.clone()
                }
                _ => shlex::try_join(argv.iter().map(String::as_str))
                    .unwrap_or_else(|_| argv.join(" ")),
            };
            (
                "Bash".to_string(),
                serde_json::json!({ "command": command }),
            )
        }
        _ => (name.to_string(), args),
    }
}

/// A hook's key and command, for messages about it.
pub(crate) fn describe(hook: &Hook) -> String {
    format!(
        "{} hook `{}` ({}, {})",
        hook.event.config_name(),
        hook.handler.command,
        hook.source_path.display(),
        hook.key
    )
}

/// How to trust `hook`: the record to add to the user's config.
pub(crate) fn trust_hint(hook: &Hook, config_file: &Path) -> String {
    format!(
        "{} is not trusted ({}) and did not run; to run it, add to {}:\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n(or run once with `keel exec --dangerously-bypass-hook-trust`)",
        describe(hook),
        hook.trust.wire_name(),
        config_file.display(),
        hook.key,
        hook.current_hash
    )
}

/// `hook_started` events for the hooks of `event` about to run (those waited for).
pub(crate) fn started_events(
    inventory: &HookInventory,
    event: HookEvent,
    name: Option<&str>,
    bypass_trust: bool,
    call_id: Option<&str>,
    turn_id: &str,
) -> Vec<keel_protocol::EventMsg> {
    let now = std::time::SystemTime::now();
    inventory
        .matching(event, name, bypass_trust)
        .filter(|hook| !hook.handler.is_async)
        .map(|hook| {
            keel_protocol::EventMsg::HookStarted(keel_protocol::HookRunEvent {
                turn_id: Some(turn_id.to_string()),
                run: run_summary(hook, call_id, now, None),
            })
        })
        .collect()
}

/// `hook_completed` events for each run, then warnings for failed hooks and system messages.
pub(crate) fn finished_events(
    outcome: &EventOutcome,
    call_id: Option<&str>,
    turn_id: &str,
) -> Vec<keel_protocol::EventMsg> {
    let mut events: Vec<keel_protocol::EventMsg> = outcome
        .runs
        .iter()
        .map(|report| {
            keel_protocol::EventMsg::HookCompleted(keel_protocol::HookRunEvent {
                turn_id: Some(turn_id.to_string()),
                run: run_summary(
                    &report.hook,
                    call_id,
                    report.started_at,
                    Some((&report.outcome, report.duration)),
                ),
            })
        })
        .collect();
    events.extend(
        outcome.warnings().into_iter().map(|message| {
            keel_protocol::EventMsg::Warning(keel_protocol::WarningEvent { message })
        }),
    );
    events
}
