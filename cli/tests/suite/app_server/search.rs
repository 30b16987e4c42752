//! `thread/search` over recorded threads: a match in a user message, an answer or the
//! thread's name finds the thread once, newest first, with a snippet; pages; bad input.

use keel_test_support::{Script, Turn, assistant_message};
use serde_json::json;

use super::common::World;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_are_found_by_their_messages_and_names() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("ok")]),
        Turn::new([assistant_message("I like KIWI fruit")]),
        Turn::new([assistant_message("ok")]),
        Turn::new([assistant_message("ok")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let mut ids = Vec::new();
    for prompt in ["alpha kiwi task", "beta task", "gamma task", "delta task"] {
        let id = server.start_thread(world.thread_params()).await?;
        let turn = server.start_turn(&id, prompt).await?;
        server.read_turn_completed(&turn).await?;
        ids.push(id);
    }
    server
        .request(
            "thread/name/set",
            json!({"threadId": ids[2], "name": "Kiwi plans"}),
        )
        .await?;
    let found = server
        .request("thread/search", json!({"searchTerm": "kiwi"}))
        .await?;
    let results: Vec<(String, String)> = found["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["thread"]["id"].as_str().unwrap_or_default().to_string(),
                r["snippet"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    anyhow::ensure!(
        results
            == vec![
                (ids[2].clone(), "Kiwi plans".to_string()),
                (ids[1].clone(), "I like KIWI fruit".to_string()),
                (ids[0].clone(), "alpha kiwi task".to_string()),
            ],
        "{found}"
    );
    anyhow::ensure!(found["nextCursor"].is_null(), "{found}");

    let first = server
        .request("thread/search", json!({"searchTerm": "KIWI", "limit": 1}))
        .await?;
    anyhow::ensure!(
        first["data"][0]["thread"]["id"] == ids[2].as_str(),
        "{first}"
    );
    let cursor = first["nextCursor"].clone();
    anyhow::ensure!(cursor.is_string(), "{first}");
    let second = server
        .request(
            "thread/search",
            json!({"searchTerm": "KIWI", "limit": 1, "cursor": cursor}),
        )
        .await?;
    anyhow::ensure!(
        second["data"][0]["thread"]["id"] == ids[1].as_str(),
        "{second}"
    );

    let none = server
        .request("thread/search", json!({"searchTerm": "papaya"}))
        .await?;
    anyhow::ensure!(none["data"] == json!([]), "{none}");
    let empty = server
        .request("thread/search", json!({"searchTerm": "  "}))
        .await;
    anyhow::ensure!(
        matches!(&empty, Err(keel_test_support::Error::JsonRpc { error, .. })
            if error["code"] == -32602),
        "{empty:?}"
    );
    // Archived and brought back, the oldest thread keeps its place among the results.
    server
        .request("thread/archive", json!({"threadId": ids[0]}))
        .await?;
    let archived = server
        .request(
            "thread/search",
            json!({"searchTerm": "kiwi", "archived": true}),
        )
        .await?;
    anyhow::ensure!(
        archived["data"][0]["thread"]["id"] == ids[0].as_str(),
        "{archived}"
    );
    server
        .request("thread/unarchive", json!({"threadId": ids[0]}))
        .await?;
    let again = server
        .request("thread/search", json!({"searchTerm": "kiwi"}))
        .await?;
    let order: Vec<&str> = again["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["thread"]["id"].as_str())
        .collect();
    anyhow::ensure!(
        order == [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()],
        "{again}"
    );

    // A cursor this server never returned is named, not misread as a position.
    let bad = server
        .request(
            "thread/search",
            json!({"searchTerm": "kiwi", "cursor": "rollout-not-a-position"}),
        )
        .await;
    anyhow::ensure!(
        matches!(&bad, Err(keel_test_support::Error::JsonRpc { error, .. })
            if error["code"] == -32602 && error["message"].as_str().is_some_and(|m| m.contains("cursor"))),
        "{bad:?}"
    );
    Ok(())
}
