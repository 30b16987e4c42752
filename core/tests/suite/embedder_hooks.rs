//! Hooks an embedding program registers in code: told the same JSON as the user's command
//! hooks, they block a tool call (the model reads the reason, the command never runs), add
//! context the model reads, and a hook that panics is reported without ending the turn.

use std::sync::{Arc, Mutex};

use keel_core::ConversationManager;
use keel_core::hooks::{EmbeddedHook, HookEvent, HookResponse};
use keel_protocol::EventMsg;
use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_in_code_block_calls_add_context_and_survive_a_panic() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "touch blocked.txt"])]),
        Turn::new([shell_call("c2", ["bash", "-lc", "touch allowed.txt"])]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut env = workspace_write(script, "never").await?;
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let record = seen.clone();
    let guard = EmbeddedHook::new("no-blocked", HookEvent::PreToolUse, move |input: Value| {
        let record = record.clone();
        async move {
            let command = input["tool_input"]["command"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Ok(mut seen) = record.lock() {
                seen.push(input);
            }
            if command.contains("blocked") {
                HookResponse::block("files named blocked are off limits")
            } else {
                HookResponse::proceed().with_context("KEEL-EMBEDDED-CONTEXT for this call")
            }
        }
    })
    .matcher("Bash")?;
    // Never matches: `shell` calls reach hooks as `Bash`.
    let unmatched = EmbeddedHook::new("shell-only", HookEvent::PreToolUse, |_: Value| async {
        HookResponse::block("must not run")
    })
    .matcher("shell")?;
    let panicking = EmbeddedHook::new("broken", HookEvent::UserPromptSubmit, |_: Value| async {
        panic!("a bug in the embedder's hook")
    });
    env.manager = ConversationManager::builder()
        .env(Arc::new(|_| None))
        .hook(guard)
        .hook(unmatched)
        .hook(panicking)
        .build()?;
    let new = env.start().await?;
    say(&new.conversation, "make two files").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("done"));

    assert!(!env.ws().join("blocked.txt").exists());
    assert!(env.ws().join("allowed.txt").exists());
    let requests = env.mock.requests();
    let blocked = requests[1]
        .tool_output("c1")
        .and_then(|output| output.as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(
        blocked.contains("files named blocked are off limits"),
        "{blocked}"
    );
    assert!(
        requests[2]
            .body
            .to_string()
            .contains("KEEL-EMBEDDED-CONTEXT for this call"),
        "the context did not reach the model"
    );
    let warnings: Vec<String> = events
        .iter()
        .filter_map(|event| match &event.msg {
            EventMsg::Warning(warning) => Some(warning.message.clone()),
            _ => None,
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("UserPromptSubmit hook `broken`") && w.contains("panicked")),
        "{warnings:?}"
    );

    let seen = seen.lock().map(|seen| seen.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["hook_event_name"], "PreToolUse");
    assert_eq!(seen[0]["tool_name"], "Bash");
    assert_eq!(seen[0]["tool_use_id"], "c1");
    assert_eq!(seen[0]["cwd"], env.ws().display().to_string());
    Ok(())
}

#[test]
fn a_bad_matcher_is_refused_when_the_hook_is_made() {
    let made = EmbeddedHook::new("bad", HookEvent::PreToolUse, |_: Value| async {
        HookResponse::proceed()
    })
    .matcher("Ba(sh");
    let err = made.err().map(|err| err.to_string()).unwrap_or_default();
    assert!(err.starts_with("invalid hook matcher `Ba(sh`"), "{err}");
}
