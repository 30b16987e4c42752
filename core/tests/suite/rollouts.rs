use keel_core::{ConversationManager, list_conversations, load_rollout};
use keel_protocol::EventMsg;
use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use std::sync::Arc;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_and_fork_rebuild_history_from_the_rollout() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "remember-me"])]),
        Turn::new([assistant_message("first done")]),
        Turn::new([assistant_message("resumed reply")]),
        Turn::new([assistant_message("forked reply")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    let id = new.conversation_id;
    say(&new.conversation, "original task").await?;
    until_turn_end(&new.conversation).await?;
    let path = new
        .session_configured
        .rollout_path
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no rollout path"))?;
    assert!(path.starts_with(env.home.path().join("sessions")));
    drop(new);

    let loaded = load_rollout(&path).await?;
    assert_eq!(loaded.meta.id, id);
    assert!(loaded.history.len() >= 4, "{:?}", loaded.history);

    // Resume in a fresh manager, as after a restart.
    let manager = ConversationManager::with_env(Arc::new(|_| None));
    let resumed = manager.resume_conversation(env.config()?, &path).await?;
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
    drop(resumed);

    let forked = manager.fork_conversation(env.config()?, &path).await?;
    assert_ne!(forked.conversation_id, id);
    let fork_path = forked
        .session_configured
        .rollout_path
        .clone()
        .unwrap_or_default();
    assert_ne!(fork_path, path);
    say(&forked.conversation, "fork it").await?;
    let events = until_turn_end(&forked.conversation).await?;
    assert_eq!(last_agent_message(&events).as_deref(), Some("forked reply"));
    let sent = serde_json::to_string(env.mock.requests()[3].input())?;
    assert!(
        sent.contains("original task") && sent.contains("continue"),
        "{sent}"
    );
    env.mock.verify()?;

    let page = list_conversations(env.home.path(), 1, None).await?;
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].id, forked.conversation_id, "newest first");
    let cursor = page
        .next_cursor
        .ok_or_else(|| anyhow::anyhow!("no cursor"))?;
    let page2 = list_conversations(env.home.path(), 10, Some(&cursor)).await?;
    assert_eq!(page2.items.len(), 1);
    assert_eq!(page2.items[0].id, id);
    assert_eq!(page2.items[0].preview, "original task");
    assert_eq!(page2.next_cursor, None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_a_torn_last_line_keeps_new_lines() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("before crash")]),
        Turn::new([assistant_message("after crash")]),
    ]);
    let env = TestEnv::new(script, &[]).await?;
    let new = env.start().await?;
    say(&new.conversation, "first").await?;
    until_turn_end(&new.conversation).await?;
    let path = new
        .session_configured
        .rollout_path
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no rollout path"))?;
    drop(new);

    // A crash mid-write leaves a partial line without its newline.
    let mut text = tokio::fs::read_to_string(&path).await?;
    text.push_str("{\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"type\":\"event_msg\",\"pay");
    tokio::fs::write(&path, text).await?;

    let manager = ConversationManager::with_env(Arc::new(|_| None));
    let resumed = manager.resume_conversation(env.config()?, &path).await?;
    say(&resumed.conversation, "second").await?;
    until_turn_end(&resumed.conversation).await?;
    drop(resumed);

    let loaded = load_rollout(&path).await?;
    let started = loaded
        .events
        .iter()
        .filter(|e| matches!(e, EventMsg::TaskStarted(_)))
        .count();
    assert_eq!(started, 2, "{:#?}", loaded.events);
    Ok(())
}
