//! `thread/readState/*`: a finished turn marks a recorded thread unread, a person marks it
//! read or unread with the revision they saw, a stale revision is refused with the current
//! state, a `!cmd` turn changes nothing, and the state outlives the server.

use anyhow::Context;
use keel_test_support::{Script, Turn, assistant_message};
use serde_json::{Value, json};

use super::common::{World, methods, until_turn_completed};

/// Sends a request expected to fail; returns its error object.
async fn refused(
    server: &mut keel_test_support::AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let id = server.send_request(method, params).await?;
    let answer = server.read_response(id).await?;
    answer
        .get("error")
        .cloned()
        .with_context(|| format!("{method} succeeded: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_mark_threads_unread_and_people_mark_them_read() -> anyhow::Result<()> {
    let world = World::new(Script::new([Turn::new([assistant_message("news")])]), &[]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    // No turn yet: no read state, and it cannot be marked.
    let read = server
        .request("thread/read", json!({"threadId": thread}))
        .await?;
    assert_eq!(read["readState"], Value::Null, "{read}");
    let error = refused(
        &mut server,
        "thread/readState/update",
        json!({"threadId": thread, "operation": {"type": "read"}}),
    )
    .await?;
    assert_eq!(error["code"], -32600);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("read state unavailable")),
        "{error}"
    );

    // The turn's end marks it unread from that turn, announced before `turn/completed`.
    let turn = server.start_turn(&thread, "anything new?").await?;
    let messages = until_turn_completed(&mut server, &turn).await?;
    let kinds = methods(&messages);
    let changed_at = kinds
        .iter()
        .position(|m| m == "thread/readState/changed")
        .with_context(|| format!("no readState/changed: {kinds:?}"))?;
    assert_eq!(changed_at + 1, kinds.len() - 1, "{kinds:?}");
    let unread = messages[changed_at]["params"].clone();
    assert_eq!(unread["threadId"], thread.as_str());
    assert_eq!(
        unread["readState"]["firstUnread"],
        json!({"type": "turn", "turnId": turn})
    );
    let revision = unread["readState"]["revision"].clone();

    // The person reads it, with the revision they were shown.
    let read = server
        .request(
            "thread/readState/update",
            json!({"threadId": thread, "operation": {"type": "read"}, "expectedRevision": revision}),
        )
        .await?;
    assert_eq!(read["readState"]["firstUnread"], Value::Null);
    assert_ne!(read["readState"]["revision"], revision);
    let told = server.read_notification("thread/readState/changed").await?;
    assert_eq!(told["params"]["readState"], read["readState"]);

    // A view from before that is stale: refused, with the current state to retry from.
    let error = refused(
        &mut server,
        "thread/readState/update",
        json!({"threadId": thread, "operation": {"type": "unread"}, "expectedRevision": revision}),
    )
    .await?;
    assert_eq!(error["code"], -32600);
    assert_eq!(error["message"], "read state changed");
    assert_eq!(error["data"]["reason"], "readStateConflict");
    assert_eq!(error["data"]["readState"], read["readState"]);

    // Marked unread again: the whole thread.
    let unread = server
        .request(
            "thread/readState/update",
            json!({"threadId": thread, "operation": {"type": "unread"}}),
        )
        .await?;
    assert_eq!(
        unread["readState"]["firstUnread"],
        json!({"type": "threadStart"})
    );
    server.read_notification("thread/readState/changed").await?;

    // The user's own command brings no results to read: no change.
    server
        .request(
            "thread/shellCommand",
            json!({"threadId": thread, "command": "true"}),
        )
        .await?;
    let started = server.read_notification("turn/started").await?;
    let shell_turn = started["params"]["turn"]["id"]
        .as_str()
        .context("turn id")?
        .to_string();
    let messages = until_turn_completed(&mut server, &shell_turn).await?;
    assert!(
        !methods(&messages).contains(&"thread/readState/changed".to_string()),
        "{:?}",
        methods(&messages)
    );
    drop(server);

    // A new server reads the same state, in `thread/read` and in `thread/list`.
    let mut server = world.server().await?;
    let read = server
        .request("thread/read", json!({"threadId": thread}))
        .await?;
    assert_eq!(read["readState"], unread["readState"]);
    let list = server.request("thread/list", json!({})).await?;
    assert_eq!(list["readStates"][thread.as_str()], unread["readState"]);

    // Unknown threads and ephemeral ones have none.
    let error = refused(
        &mut server,
        "thread/readState/update",
        json!({"threadId": "01a20467-0000-7000-8000-000000000000", "operation": {"type": "read"}}),
    )
    .await?;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("no thread")),
        "{error}"
    );
    let mut params = world.thread_params();
    params["ephemeral"] = json!(true);
    let ephemeral = server.start_thread(params).await?;
    let error = refused(
        &mut server,
        "thread/readState/update",
        json!({"threadId": ephemeral, "operation": {"type": "read"}}),
    )
    .await?;
    assert_eq!(error["code"], -32600, "{error}");
    Ok(())
}
