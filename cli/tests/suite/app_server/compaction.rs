//! Compaction on the app-server: `thread/compact/start` runs one as a turn of its own, and a
//! thread whose last response filled the context compacts before its next turn; both show a
//! `contextCompaction` item and `thread/compacted`.

use keel_test_support::{Script, Turn, Usage, assistant_message};
use serde_json::{Value, json};

use super::common::{World, methods, until_turn_completed};

const FULL: Usage = Usage {
    input_tokens: 10,
    cached_tokens: 0,
    output_tokens: 5,
    reasoning_tokens: 0,
};
const LIGHT: Usage = Usage {
    input_tokens: 4,
    cached_tokens: 0,
    output_tokens: 1,
    reasoning_tokens: 0,
};

/// The `contextCompaction` item's id, checked to start, complete and be announced once.
fn compaction_of(messages: &[Value], thread_id: &str, turn_id: &str) -> anyhow::Result<String> {
    let started: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m["method"] == "item/started" && m["params"]["item"]["type"] == "contextCompaction"
        })
        .collect();
    let completed: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m["method"] == "item/completed" && m["params"]["item"]["type"] == "contextCompaction"
        })
        .collect();
    anyhow::ensure!(
        started.len() == 1 && completed.len() == 1,
        "{:?}",
        methods(messages)
    );
    let id = started[0]["params"]["item"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(!id.is_empty() && completed[0]["params"]["item"]["id"] == id.as_str());
    // Exactly the reference shape: `id` and `type`.
    let item = completed[0]["params"]["item"]
        .as_object()
        .map(|object| object.keys().cloned().collect::<Vec<_>>());
    anyhow::ensure!(
        item == Some(vec!["id".to_string(), "type".to_string()]),
        "{item:?}"
    );
    let compacted: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "thread/compacted")
        .collect();
    anyhow::ensure!(compacted.len() == 1, "{:?}", methods(messages));
    anyhow::ensure!(
        compacted[0]["params"] == json!({"threadId": thread_id, "turnId": turn_id}),
        "{}",
        compacted[0]
    );
    Ok(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_start_runs_a_compaction_turn() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first answer")]).with_usage(LIGHT),
        Turn::new([assistant_message("MANUAL-SUMMARY")]).with_usage(LIGHT),
        Turn::new([assistant_message("after")]).with_usage(LIGHT),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "FIRST-WORDS").await?;
    server.read_turn_completed(&turn_id).await?;

    let result = server
        .request("thread/compact/start", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(result, json!({}));
    let started = server
        .read_until("the compaction turn", |m| {
            m["method"] == "turn/started" && m["params"]["turn"]["id"] != turn_id.as_str()
        })
        .await?;
    let compact_turn = started["params"]["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let messages = until_turn_completed(&mut server, &compact_turn).await?;
    compaction_of(&messages, &thread_id, &compact_turn)?;
    let last = messages.last().cloned().unwrap_or_default();
    assert_eq!(last["params"]["turn"]["status"], "completed");
    // The summary is not shown as an agent message.
    assert!(
        !messages
            .iter()
            .any(|m| m["method"] == "item/agentMessage/delta"
                && m["params"]["turnId"] == compact_turn.as_str()),
        "{:?}",
        methods(&messages)
    );

    let next = server.start_turn(&thread_id, "NEXT-WORDS").await?;
    server.read_turn_completed(&next).await?;
    let sent = serde_json::to_string(world.mock.requests()[2].input())?;
    assert!(
        sent.contains("FIRST-WORDS")
            && sent.contains("MANUAL-SUMMARY")
            && sent.contains("NEXT-WORDS"),
        "{sent}"
    );
    assert!(!sent.contains("first answer"), "{sent}");

    // thread/read shows the compaction as an item of its turn.
    let read = server
        .request(
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await?;
    let turns = read["thread"]["turns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(turns.len(), 3, "{read}");
    assert_eq!(turns[1]["items"][0]["type"], "contextCompaction", "{read}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_context_is_compacted_before_the_next_turn() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first answer")]).with_usage(FULL),
        Turn::new([assistant_message("AUTO-SUMMARY")]).with_usage(LIGHT),
        Turn::new([assistant_message("second answer")]).with_usage(LIGHT),
    ]);
    let world = World::new(script, &[("model_auto_compact_token_limit", 12.into())]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let first = server.start_turn(&thread_id, "FIRST-WORDS").await?;
    let messages = until_turn_completed(&mut server, &first).await?;
    assert!(
        !messages.iter().any(|m| m["method"] == "thread/compacted"),
        "no compaction within the first turn: {:?}",
        methods(&messages)
    );
    let second = server.start_turn(&thread_id, "SECOND-WORDS").await?;
    let messages = until_turn_completed(&mut server, &second).await?;
    compaction_of(&messages, &thread_id, &second)?;
    let sent = serde_json::to_string(world.mock.requests()[2].input())?;
    assert!(
        sent.contains("AUTO-SUMMARY") && sent.contains("SECOND-WORDS"),
        "{sent}"
    );
    assert!(!sent.contains("first answer"), "{sent}");
    world.mock.verify()?;
    Ok(())
}
