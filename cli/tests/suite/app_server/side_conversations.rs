//! Side conversations, as the Codex 0.169 TUI's `/side` makes them: an ephemeral fork that
//! leaves its turns out of the answer, ground rules added with `thread/inject_items`, and a
//! question that sees the main thread's history — while the main thread sees none of it and
//! nothing of it is recorded.

use keel_test_support::{Script, Turn, assistant_message};
use serde_json::json;

use super::common::World;
use crate::suite::rollout_files;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_conversation_sees_the_main_thread_and_leaves_no_trace() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("main answer")]),
        Turn::new([assistant_message("side answer")]),
        Turn::new([assistant_message("main again")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let main = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&main, "MAIN-SECRET-WORD").await?;
    server.read_turn_completed(&turn).await?;
    let sessions = world.home.path().join("sessions");
    let files_before = rollout_files(&sessions)?.len();

    let fork = server
        .request(
            "thread/fork",
            json!({"threadId": main, "ephemeral": true, "excludeTurns": true}),
        )
        .await?;
    let side = fork["thread"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(side != main && !side.is_empty(), "{fork}");
    anyhow::ensure!(
        fork["thread"]["ephemeral"] == true
            && fork["thread"]["path"].is_null()
            && fork["thread"]["forkedFromId"] == main.as_str()
            && fork["thread"]["turns"] == json!([]),
        "{fork}"
    );
    let injected = server
        .request(
            "thread/inject_items",
            json!({"threadId": side, "items": [
                {"type": "message", "role": "developer",
                 "content": [{"type": "input_text", "text": "<side_conversation>SIDE-RULES</side_conversation>"}],
                 "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["x"]}},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Side conversation boundary."}]}
            ]}),
        )
        .await?;
    anyhow::ensure!(injected == json!({}), "{injected}");
    let turn = server.start_turn(&side, "SIDE-QUESTION").await?;
    let done = server.read_turn_completed(&turn).await?;
    // The injected items are not shown: the turn has the question and the answer only.
    let kinds: Vec<String> = done["turn"]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item["type"].as_str().unwrap_or_default().to_string())
        .collect();
    anyhow::ensure!(kinds == ["userMessage", "agentMessage"], "{kinds:?}");

    let requests = world.mock.requests();
    let sent = serde_json::to_string(requests[1].input())?;
    let order: Vec<Option<usize>> = [
        "MAIN-SECRET-WORD",
        "SIDE-RULES",
        "Side conversation boundary",
        "SIDE-QUESTION",
    ]
    .iter()
    .map(|needle| sent.find(needle))
    .collect();
    anyhow::ensure!(
        order.iter().all(Option::is_some) && order.windows(2).all(|w| w[0] < w[1]),
        "the side request has the main history, the rules, the boundary, then the question: {sent}"
    );

    // Not listed, not recorded; loaded while open.
    let list = server.request("thread/list", json!({})).await?;
    anyhow::ensure!(!list.to_string().contains(&side), "{list}");
    let loaded = server.request("thread/loaded/list", json!({})).await?;
    anyhow::ensure!(loaded.to_string().contains(&side), "{loaded}");
    anyhow::ensure!(rollout_files(&sessions)?.len() == files_before);

    // The main thread never hears of it.
    let turn = server.start_turn(&main, "BACK-ON-MAIN").await?;
    server.read_turn_completed(&turn).await?;
    let requests = world.mock.requests();
    let sent = serde_json::to_string(requests[2].input())?;
    anyhow::ensure!(
        sent.contains("BACK-ON-MAIN")
            && !sent.contains("SIDE-QUESTION")
            && !sent.contains("SIDE-RULES"),
        "{sent}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_that_cannot_be_injected_are_refused() -> anyhow::Result<()> {
    let world = World::new(Script::new(Vec::<Turn>::new()), &[]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let message = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ok"}]});
    let cases = [
        (json!([]), "must not be empty"),
        (json!([{"foo": 1}]), "items[0]"),
        (json!([message, "text"]), "items[1]"),
        (
            json!([{"type": "reasoning", "summary": []}]),
            "cannot be added",
        ),
        (json!([{"type": "bogus"}]), "cannot be added"),
    ];
    for (items, expected) in cases {
        let result = server
            .request(
                "thread/inject_items",
                json!({"threadId": thread, "items": items}),
            )
            .await;
        let error = match result {
            Err(keel_test_support::Error::JsonRpc { error, .. }) => error,
            other => anyhow::bail!("{items}: expected an error, got {other:?}"),
        };
        anyhow::ensure!(error["code"] == -32602, "{items}: {error}");
        let text = error["message"].as_str().unwrap_or_default();
        anyhow::ensure!(text.contains(expected), "{items}: {error}");
    }
    Ok(())
}
