//! Where conversations are recorded, chosen in code: an in-memory store keeps everything off
//! the disk and a conversation resumes from it by id, history and all; without a store of
//! the embedder's, resuming by id reads the rollout files.

use std::sync::Arc;

use keel_core::{ConversationManager, InMemoryRolloutStore, RolloutItem};
use keel_protocol::EventMsg;
use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_memory_store_records_and_resumes_without_touching_the_disk() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "remember-me"])]),
        Turn::new([assistant_message("first done")]),
        Turn::new([assistant_message("resumed reply")]),
    ]);
    let mut env = TestEnv::new(script, &[]).await?;
    let store = Arc::new(InMemoryRolloutStore::default());
    env.manager = ConversationManager::builder()
        .env(Arc::new(|_| None))
        .rollout_store(store.clone())
        .build()?;
    let new = env.start().await?;
    let id = new.conversation_id;
    assert_eq!(new.session_configured.rollout_path, None);
    say(&new.conversation, "original task").await?;
    until_turn_end(&new.conversation).await?;
    env.manager.remove_conversation(id).await;
    drop(new);

    assert!(
        !env.home.path().join("sessions").exists(),
        "a rollout file was written"
    );
    let items = store.items(id).unwrap_or_default();
    assert!(matches!(items.first(), Some(RolloutItem::SessionMeta(meta)) if meta.id == id));
    assert!(items.iter().any(|item| matches!(
        item,
        RolloutItem::EventMsg(EventMsg::AgentMessage(message)) if message.message == "first done"
    )));

    // A fresh manager on the same store, as a service would after a restart.
    let manager = ConversationManager::builder()
        .env(Arc::new(|_| None))
        .rollout_store(store.clone())
        .build()?;
    let resumed = manager.resume_conversation_by_id(env.config()?, id).await?;
    assert_eq!(resumed.conversation_id, id);
    let initial = resumed
        .session_configured
        .initial_messages
        .clone()
        .unwrap_or_default();
    assert!(
        initial
            .iter()
            .any(|m| matches!(m, EventMsg::AgentMessage(a) if a.message == "first done"))
    );
    say(&resumed.conversation, "continue").await?;
    let events = until_turn_end(&resumed.conversation).await?;
    assert_eq!(
        last_agent_message(&events).as_deref(),
        Some("resumed reply")
    );
    let sent = serde_json::to_string(env.mock.requests()[2].input())?;
    assert!(
        sent.contains("original task") && sent.contains("remember-me"),
        "{sent}"
    );
    let after = store.items(id).unwrap_or_default();
    assert!(after.len() > items.len());
    assert!(after.iter().any(|item| matches!(
        item,
        RolloutItem::EventMsg(EventMsg::AgentMessage(message)) if message.message == "resumed reply"
    )));

    let unknown = manager
        .resume_conversation_by_id(env.config()?, keel_protocol::ConversationId::new())
        .await;
    assert!(
        unknown
            .err()
            .is_some_and(|err| err.to_string().contains("no conversation with id")),
        "resuming an id the store does not hold"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_store_resume_by_id_reads_the_rollout_files() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first done")]),
        Turn::new([assistant_message("resumed reply")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    let id = new.conversation_id;
    say(&new.conversation, "original task").await?;
    until_turn_end(&new.conversation).await?;
    env.manager.remove_conversation(id).await;
    drop(new);

    let manager = ConversationManager::with_env(Arc::new(|_| None));
    let resumed = manager.resume_conversation_by_id(env.config()?, id).await?;
    assert!(
        resumed
            .session_configured
            .rollout_path
            .as_ref()
            .is_some_and(|path| path.starts_with(env.home.path().join("sessions")))
    );
    say(&resumed.conversation, "continue").await?;
    until_turn_end(&resumed.conversation).await?;
    let sent = serde_json::to_string(env.mock.requests()[1].input())?;
    assert!(
        sent.contains("original task") && sent.contains("first done"),
        "{sent}"
    );
    Ok(())
}

/// A fork by id reads the original from the embedder's store and records the copy there too:
/// the copy's model sees the original's history, and neither touches the disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_by_id_copies_from_the_store_into_the_store() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("original answer")]),
        Turn::new([assistant_message("fork answer")]),
    ]);
    let mut env = TestEnv::new(script, &[]).await?;
    let store = Arc::new(InMemoryRolloutStore::default());
    env.manager = ConversationManager::builder()
        .env(Arc::new(|_| None))
        .rollout_store(store.clone())
        .build()?;
    let new = env.start().await?;
    let original = new.conversation_id;
    say(&new.conversation, "remember the kiwi").await?;
    until_turn_end(&new.conversation).await?;

    let fork = env
        .manager
        .fork_conversation_by_id(env.config()?, original, false)
        .await?;
    assert_ne!(fork.conversation_id, original);
    say(&fork.conversation, "what fruit?").await?;
    let events = until_turn_end(&fork.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("fork answer"));
    let sent = serde_json::to_string(env.mock.requests()[1].input())?;
    assert!(
        sent.contains("remember the kiwi") && sent.contains("original answer"),
        "{sent}"
    );
    let copied = store.items(fork.conversation_id).unwrap_or_default();
    assert!(matches!(
        copied.first(),
        Some(RolloutItem::SessionMeta(meta)) if meta.forked_from == Some(original)
    ));
    assert!(
        !env.home.path().join("sessions").exists(),
        "a rollout file was written"
    );
    let unknown = env
        .manager
        .fork_conversation_by_id(env.config()?, keel_protocol::ConversationId::new(), false)
        .await;
    assert!(unknown.is_err(), "a fork of an id the store does not hold");
    Ok(())
}

/// The text of every message of a captured request.
fn request_text(request: &keel_test_support::CapturedRequest) -> String {
    request
        .input()
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sub-agent closed and resumed is read back from the embedder's store (not looked for in
/// rollout files): it answers again with what it was told before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_sub_agent_resumes_from_the_store() -> anyhow::Result<()> {
    let mock = keel_test_support::MockModelServer::builder()
        .responder(|request| {
            let text = request_text(request);
            if text.contains("CHILD-TASK") {
                let reply = if text.contains("AGAIN") {
                    "child: again, still about the kiwi"
                } else {
                    "child: noted the kiwi"
                };
                return Some(Turn::new([assistant_message(reply)]));
            }
            let id = request
                .tool_output("s1")
                .and_then(serde_json::Value::as_str)
                .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
                .and_then(|value| value["agent_id"].as_str().map(str::to_string))
                .unwrap_or_default();
            let steps = [
                (
                    "s1",
                    "spawn_agent",
                    serde_json::json!({"message": "CHILD-TASK: note the kiwi"}),
                ),
                (
                    "w1",
                    "wait_agent",
                    serde_json::json!({"ids": [id], "timeout_ms": 30000}),
                ),
                ("c1", "close_agent", serde_json::json!({"id": id})),
                ("r1", "resume_agent", serde_json::json!({"id": id})),
                (
                    "i1",
                    "send_input",
                    serde_json::json!({"id": id, "message": "AGAIN"}),
                ),
                (
                    "w2",
                    "wait_agent",
                    serde_json::json!({"ids": [id], "timeout_ms": 30000}),
                ),
            ];
            for (call_id, tool, args) in steps {
                if request.tool_output(call_id).is_none() {
                    return Some(Turn::new([keel_test_support::function_call(
                        call_id,
                        tool,
                        args.to_string(),
                    )]));
                }
            }
            Some(Turn::new([assistant_message("PARENT DONE")]))
        })
        .start()
        .await?;
    let mut env = TestEnv::with_mock(mock, &[])?;
    let store = Arc::new(InMemoryRolloutStore::default());
    env.manager = ConversationManager::builder()
        .env(Arc::new(|_| None))
        .rollout_store(store.clone())
        .build()?;
    let new = env.start().await?;
    say(&new.conversation, "delegate").await?;
    let events = until_turn_end(&new.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("PARENT DONE"));
    let resumed = env
        .mock
        .requests()
        .iter()
        .find_map(|request| request.tool_output("r1").cloned())
        .ok_or_else(|| anyhow::anyhow!("resume_agent had no output"))?;
    assert!(!resumed.to_string().contains("not found"), "{resumed}");
    let waited = env
        .mock
        .requests()
        .iter()
        .find_map(|request| request.tool_output("w2").cloned())
        .ok_or_else(|| anyhow::anyhow!("the second wait had no output"))?;
    assert!(
        waited
            .to_string()
            .contains("child: again, still about the kiwi"),
        "{waited}"
    );
    assert!(
        !env.home.path().join("sessions").exists(),
        "a rollout file was written"
    );
    Ok(())
}
