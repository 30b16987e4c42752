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
