//! Sections, attachments and git metadata of threads over `keel app-server`, with Codex
//! 0.171's shapes: sections created, renamed and deleted around the built-in Pinned one;
//! threads moved into them (and listed in their order); attachments added once per identity
//! and listed by thread and by owner; git facts merged; all of it still there after a restart.

use anyhow::Context;
use keel_test_support::{Script, Turn, assistant_message};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{World, until_turn_completed};

const PINNED: &str = "01984de2-8f74-7c91-a3b2-5c5e937cf318";
const NO_SUCH_THREAD: &str = "00000000-0000-7000-8000-000000000000";

async fn refused(
    server: &mut keel_test_support::AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<(i64, String)> {
    let id = server.send_request(method, params).await?;
    let answer = server.read_response(id).await?;
    let error = answer
        .get("error")
        .with_context(|| format!("{method} succeeded: {answer}"))?;
    Ok((
        error["code"].as_i64().unwrap_or_default(),
        error["message"].as_str().unwrap_or_default().to_string(),
    ))
}

/// A recorded thread with one turn.
async fn thread_with_turn(
    world: &World,
    server: &mut keel_test_support::AppServerProcess,
) -> anyhow::Result<String> {
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "hello").await?;
    until_turn_completed(server, &turn).await?;
    Ok(thread)
}

fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .map(|data| {
            data.iter()
                .filter_map(|thread| thread["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sections_attachments_and_git_facts_are_kept_across_restarts() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("one")]),
        Turn::new([assistant_message("two")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;

    // Sections: Pinned always first; created ones follow in creation order.
    let sections = server.request("threadSection/list", json!({})).await?;
    assert_eq!(
        sections,
        json!({"data": [{"id": PINNED, "name": "Pinned", "appearance": null}], "nextCursor": null})
    );
    let work = server
        .request("threadSection/create", json!({"name": "Work"}))
        .await?["section"]
        .clone();
    assert_eq!(work["appearance"], Value::Null);
    let play = server
        .request(
            "threadSection/create",
            json!({"name": "Play", "appearance": {"color": "red", "icon": "star"}}),
        )
        .await?["section"]
        .clone();
    assert_eq!(play["appearance"], json!({"icon": "star", "color": "red"}));
    let work_id = work["id"].as_str().context("section id")?.to_string();
    let renamed = server
        .request(
            "threadSection/update",
            json!({"sectionId": work_id, "name": "Work2", "appearance": {"color": "blue"}}),
        )
        .await?;
    assert_eq!(
        renamed["section"],
        json!({"id": work_id, "name": "Work2", "appearance": {"icon": null, "color": "blue"}})
    );
    let page = server
        .request("threadSection/list", json!({"limit": 1, "cursor": PINNED}))
        .await?;
    assert_eq!(page["data"][0]["id"], work_id.as_str());
    assert_eq!(page["nextCursor"], work_id.as_str());
    assert_eq!(
        refused(&mut server, "threadSection/create", json!({"name": ""})).await?,
        (-32602, "section name must not be empty".to_string())
    );
    assert_eq!(
        refused(
            &mut server,
            "threadSection/update",
            json!({"sectionId": PINNED, "name": "Mine"})
        )
        .await?,
        (
            -32602,
            "the built-in pinned section cannot be renamed".to_string()
        )
    );
    assert_eq!(
        refused(
            &mut server,
            "threadSection/delete",
            json!({"sectionId": PINNED})
        )
        .await?,
        (
            -32602,
            "the built-in pinned section cannot be deleted".to_string()
        )
    );

    // Two threads moved into Work2, the second before the first; each move is announced.
    let first = thread_with_turn(&world, &mut server).await?;
    let second = thread_with_turn(&world, &mut server).await?;
    server
        .request(
            "thread/section/move",
            json!({"threadId": first, "sectionId": work_id}),
        )
        .await?;
    let changed = server.read_notification("thread/section/changed").await?;
    assert_eq!(
        changed["params"],
        json!({"threadId": first, "sectionId": work_id})
    );
    server
        .request(
            "thread/section/move",
            json!({"threadId": second, "sectionId": work_id, "beforeThreadId": first}),
        )
        .await?;
    server.read_notification("thread/section/changed").await?;
    let in_section = server
        .request(
            "thread/list",
            json!({"sectionId": work_id, "sortKey": "section_position"}),
        )
        .await?;
    assert_eq!(ids(&in_section), vec![second.clone(), first.clone()]);
    let unsectioned = server
        .request("thread/list", json!({"sectionId": null}))
        .await?;
    assert_eq!(ids(&unsectioned), Vec::<String>::new());
    let (code, message) = refused(
        &mut server,
        "thread/section/move",
        json!({"threadId": first, "sectionId": play["id"], "beforeThreadId": second}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(message.contains("is not in section"), "{message}");
    let (code, _) = refused(
        &mut server,
        "thread/section/move",
        json!({"threadId": NO_SUCH_THREAD, "sectionId": null}),
    )
    .await?;
    assert_eq!(code, -32600);

    // Attachments: one per identity per thread, listed a page at a time.
    let added = server
        .request(
            "thread/attachment/add",
            json!({"threadId": first, "attachmentType": "file", "identityKey": "/w/a.txt",
                   "payload": {"path": "/w/a.txt"}}),
        )
        .await?;
    assert_eq!(added["outcome"], "created");
    let attachment = added["attachment"].clone();
    let told = server
        .read_notification("thread/attachment/updated")
        .await?;
    assert_eq!(
        told["params"],
        json!({"threadId": first, "attachmentType": "file", "identityKey": "/w/a.txt",
               "attachmentId": attachment["id"], "operation": "created"})
    );
    let again = server
        .request(
            "thread/attachment/add",
            json!({"threadId": first, "attachmentType": "file", "identityKey": "/w/a.txt",
                   "payload": "changed"}),
        )
        .await?;
    assert_eq!(
        again,
        json!({"outcome": "existing", "attachment": attachment})
    );
    for (thread, key) in [(&first, "/w/b.txt"), (&second, "/w/a.txt")] {
        server
            .request(
                "thread/attachment/add",
                json!({"threadId": thread, "attachmentType": "file", "identityKey": key,
                       "payload": null}),
            )
            .await?;
        server
            .read_notification("thread/attachment/updated")
            .await?;
    }
    let page = server
        .request(
            "thread/attachment/list",
            json!({"threadId": first, "limit": 1}),
        )
        .await?;
    assert_eq!(page["data"], json!([attachment]));
    let next = server
        .request(
            "thread/attachment/list",
            json!({"threadId": first, "cursor": page["nextCursor"]}),
        )
        .await?;
    assert_eq!(next["data"][0]["identityKey"], "/w/b.txt");
    assert_eq!(next["data"][0]["payload"], Value::Null);
    assert_eq!(next["nextCursor"], Value::Null);
    assert_eq!(
        refused(
            &mut server,
            "thread/attachment/list",
            json!({"threadId": first, "cursor": "garbage"})
        )
        .await?,
        (-32602, "invalid pagination cursor".to_string())
    );
    let (code, message) = refused(
        &mut server,
        "thread/attachment/add",
        json!({"threadId": NO_SUCH_THREAD, "attachmentType": "file", "identityKey": "k",
               "payload": 1}),
    )
    .await?;
    assert_eq!(
        (code, message.as_str()),
        (
            -32602,
            format!("thread not found: {NO_SUCH_THREAD}").as_str()
        )
    );
    let owners = server
        .request(
            "thread/attachmentOwner/list",
            json!({"attachmentType": "file", "identityKey": "/w/a.txt"}),
        )
        .await?;
    assert_eq!(
        owners,
        json!({"data": [{"threadId": first, "archived": false},
                        {"threadId": second, "archived": false}], "nextCursor": null})
    );
    server
        .request(
            "thread/attachment/remove",
            json!({"threadId": second, "attachmentType": "file", "identityKey": "/w/a.txt"}),
        )
        .await?;
    let told = server
        .read_notification("thread/attachment/updated")
        .await?;
    assert_eq!(told["params"]["operation"], "deleted");

    // Git facts: merged field by field.
    let updated = server
        .request(
            "thread/metadata/update",
            json!({"threadId": first, "gitInfo": {"branch": "feat", "sha": "abc123",
                   "originUrl": "https://example.com/r.git"}}),
        )
        .await?;
    assert_eq!(updated["thread"]["id"], first.as_str());
    let updated = server
        .request(
            "thread/metadata/update",
            json!({"threadId": first, "gitInfo": {"branch": null}}),
        )
        .await?;
    assert_eq!(
        updated["thread"]["gitInfo"],
        json!({"sha": "abc123", "branch": null, "originUrl": "https://example.com/r.git"})
    );
    assert_eq!(
        refused(
            &mut server,
            "thread/metadata/update",
            json!({"threadId": first, "gitInfo": {}})
        )
        .await?,
        (
            -32600,
            "gitInfo must include at least one field".to_string()
        )
    );
    drop(server);

    // A new server on the same home sees all of it.
    let mut server = world.server().await?;
    let sections = server.request("threadSection/list", json!({})).await?;
    assert_eq!(
        sections["data"].as_array().map(Vec::len),
        Some(3),
        "{sections}"
    );
    let read = server
        .request("thread/read", json!({"threadId": first}))
        .await?;
    assert_eq!(read["thread"]["section"]["name"], "Work2");
    assert!(read["thread"]["sectionEnteredAt"].is_i64(), "{read}");
    assert_eq!(read["thread"]["gitInfo"]["sha"], "abc123");
    let attachments = server
        .request("thread/attachment/list", json!({"threadId": first}))
        .await?;
    assert_eq!(attachments["data"].as_array().map(Vec::len), Some(2));
    let owners = server
        .request(
            "thread/attachmentOwner/list",
            json!({"attachmentType": "file", "identityKey": "/w/a.txt"}),
        )
        .await?;
    assert_eq!(
        owners["data"],
        json!([{"threadId": first, "archived": false}])
    );

    // Deleting the section leaves its threads unsectioned.
    server
        .request("threadSection/delete", json!({"sectionId": work_id}))
        .await?;
    let read = server
        .request("thread/read", json!({"threadId": first}))
        .await?;
    assert_eq!(read["thread"]["section"], Value::Null);
    assert_eq!(read["thread"]["sectionEnteredAt"], Value::Null);
    let unsectioned = server
        .request("thread/list", json!({"sectionId": null}))
        .await?;
    assert_eq!(ids(&unsectioned).len(), 2, "{unsectioned}");
    Ok(())
}
