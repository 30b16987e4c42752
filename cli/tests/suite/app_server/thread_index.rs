//! The thread index behind `thread/list` and `thread/search`, with the rollouts changed by
//! other processes behind its back: a thread written by another server, a message appended
//! to an old thread, a deleted rollout, and an index file that is damaged or missing.

use keel_test_support::{AppServerProcess, Script, Turn, assistant_message};
use serde_json::{Value, json};

use super::common::World;

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            entry["id"]
                .as_str()
                .or_else(|| entry["thread"]["id"].as_str())
                .map(str::to_string)
        })
        .collect()
}

async fn turn(server: &mut AppServerProcess, thread: &str, prompt: &str) -> anyhow::Result<()> {
    let turn = server.start_turn(thread, prompt).await?;
    server.read_turn_completed(&turn).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_follow_rollouts_changed_by_other_processes() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first answer")]),
        Turn::new([assistant_message("second answer")]),
        Turn::new([assistant_message("the zebra crossing")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut writer = world.server().await?;
    let mut reader = world.server().await?;
    let older = writer.start_thread(world.thread_params()).await?;
    turn(&mut writer, &older, "an old question").await?;

    // The reader builds its index now.
    let listed = reader.request("thread/list", json!({})).await?;
    assert_eq!(ids(&listed), [older.as_str()]);
    assert!(world.home.path().join("thread-index.sqlite").exists());

    // A new thread from the other server is listed first.
    let newer = writer.start_thread(world.thread_params()).await?;
    turn(&mut writer, &newer, "a new question").await?;
    let listed = reader.request("thread/list", json!({})).await?;
    assert_eq!(ids(&listed), [newer.as_str(), older.as_str()]);

    // Text appended to the old thread (its directory does not change) is found.
    turn(&mut writer, &older, "where do animals cross?").await?;
    let found = reader
        .request("thread/search", json!({"searchTerm": "zebra"}))
        .await?;
    assert_eq!(ids(&found), [older.as_str()], "{found}");
    assert_eq!(found["data"][0]["snippet"], "the zebra crossing");
    // Shorter than the index's trigrams: still found.
    let found = reader
        .request("thread/search", json!({"searchTerm": "ze"}))
        .await?;
    assert_eq!(ids(&found), [older.as_str()], "{found}");

    // A forged note pointing out of the sessions directory (at a rollout-shaped file
    // elsewhere) gets nothing into the index.
    let elsewhere = tempfile::tempdir()?;
    let read = reader
        .request("thread/read", json!({"threadId": older}))
        .await?;
    let genuine = read["thread"]["path"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let planted = elsewhere.path().join("rollout-planted.jsonl");
    std::fs::write(
        &planted,
        std::fs::read_to_string(&genuine)?.replace("where do animals cross", "PLANTED words"),
    )?;
    let sessions = world.home.path().join("sessions");
    let forged = format!("{}/{}\n", sessions.display(), pathdiff(&planted, &sessions));
    std::fs::write(world.home.path().join("thread-index.live"), forged)?;
    let found = reader
        .request("thread/search", json!({"searchTerm": "PLANTED"}))
        .await?;
    assert_eq!(ids(&found), Vec::<String>::new(), "{found}");

    // A removed rollout disappears from both.
    let read = reader
        .request("thread/read", json!({"threadId": newer}))
        .await?;
    let path = read["thread"]["path"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    drop(writer);
    std::fs::remove_file(&path)?;
    let listed = reader.request("thread/list", json!({})).await?;
    assert_eq!(ids(&listed), [older.as_str()]);
    let found = reader
        .request("thread/search", json!({"searchTerm": "question"}))
        .await?;
    assert_eq!(ids(&found), [older.as_str()]);
    drop(reader);

    // A damaged index is rebuilt from the rollouts; so is a missing one.
    let index = world.home.path().join("thread-index.sqlite");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    std::fs::write(&index, b"this is not a database, just bytes on disk")?;
    let mut server = world.server().await?;
    let found = server
        .request("thread/search", json!({"searchTerm": "zebra"}))
        .await?;
    assert_eq!(ids(&found), [older.as_str()], "{found}");
    drop(server);
    std::fs::remove_file(&index)?;
    let mut server = world.server().await?;
    let listed = server.request("thread/list", json!({})).await?;
    assert_eq!(ids(&listed), [older.as_str()]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_exec_resumes_a_thread_found_through_the_index() -> anyhow::Result<()> {
    let mock = keel_test_support::MockModelServer::builder()
        .responder(|request: &keel_test_support::CapturedRequest| {
            let seen = serde_json::to_string(request.input()).unwrap_or_default();
            Some(Turn::new([assistant_message(if seen.contains("PAPAYA") {
                "you said papaya"
            } else {
                "noted"
            })]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    turn(&mut server, &thread, "remember PAPAYA").await?;
    // A listing builds the index; `keel exec resume` then looks the thread up in it.
    server.request("thread/list", json!({})).await?;
    drop(server);
    assert!(world.home.path().join("thread-index.sqlite").is_file());
    let resumed = crate::suite::exec::keel_exec(
        world.home.path(),
        world.ws(),
        &["resume", &thread, "which fruit?"],
        None,
    )
    .await?;
    assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
    assert_eq!(resumed.stdout, "you said papaya\n");
    Ok(())
}

/// `target` relative to `base` through `..` (both absolute).
fn pathdiff(target: &std::path::Path, base: &std::path::Path) -> String {
    let ups = base.components().count() - 1;
    let mut relative = "../".repeat(ups);
    relative.push_str(&target.to_string_lossy()[1..]);
    relative
}
