//! `thread/items/list`: a thread's items in turn order, a page at a time, by turn, from an
//! item of a turn, newest first; cursors that are not the server's are refused.

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use serde_json::{Value, json};

use super::common::World;

fn kinds(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            entry["item"]["type"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_are_listed_in_pages_by_turn_and_direction() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "hi"])]),
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("second answer")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let mut turns = Vec::new();
    for prompt in ["one", "two"] {
        let turn = server.start_turn(&thread_id, prompt).await?;
        server.read_turn_completed(&turn).await?;
        turns.push(turn);
    }
    let all = server
        .request("thread/items/list", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(
        kinds(&all)
            == [
                "userMessage",
                "commandExecution",
                "agentMessage",
                "userMessage",
                "agentMessage"
            ],
        "{all}"
    );
    anyhow::ensure!(all["data"][4]["turnId"] == turns[1].as_str(), "{all}");

    let first = server
        .request(
            "thread/items/list",
            json!({"threadId": thread_id, "limit": 2}),
        )
        .await?;
    anyhow::ensure!(
        kinds(&first).len() == 2 && first["nextCursor"] == "2",
        "{first}"
    );
    let rest = server
        .request(
            "thread/items/list",
            json!({"threadId": thread_id, "cursor": "2"}),
        )
        .await?;
    anyhow::ensure!(
        kinds(&rest).len() == 3 && rest["nextCursor"].is_null(),
        "{rest}"
    );

    let newest = server
        .request(
            "thread/items/list",
            json!({"threadId": thread_id, "sortDirection": "desc", "limit": 1}),
        )
        .await?;
    anyhow::ensure!(
        newest["data"][0]["item"]["text"] == "second answer",
        "{newest}"
    );

    let first_id = all["data"][0]["item"]["id"].clone();
    let after = server
        .request(
            "thread/items/list",
            json!({"threadId": thread_id, "turnId": turns[0],
                "cursor": {"type": "item", "itemId": first_id}}),
        )
        .await?;
    anyhow::ensure!(
        kinds(&after) == ["commandExecution", "agentMessage"],
        "{after}"
    );

    for params in [
        json!({"threadId": thread_id, "cursor": {"type": "item", "itemId": first_id}}),
        json!({"threadId": thread_id, "cursor": "not-a-cursor"}),
        json!({"threadId": thread_id, "limit": 0}),
    ] {
        let refused = server.request("thread/items/list", params.clone()).await;
        anyhow::ensure!(
            matches!(&refused, Err(keel_test_support::Error::JsonRpc { error, .. })
                if error["code"] == -32602),
            "{params}: {refused:?}"
        );
    }
    Ok(())
}
