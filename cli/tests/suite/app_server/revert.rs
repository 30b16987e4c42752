//! `thread/revert` against real files: dropping turns, and with `restoreFiles` putting the
//! workspace back as it was before them — all or nothing when someone else changed a file
//! since — and the checkpoints going with `thread/delete`.

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use serde_json::json;

use super::common::World;

fn sh(call: &str, script: &str) -> Turn {
    Turn::new([shell_call(call, ["sh", "-c", script])])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_restores_the_files_the_dropped_turns_changed() -> anyhow::Result<()> {
    let script = Script::new([
        sh("a1", "echo A1 > a.txt"),
        Turn::new([assistant_message("first done")]),
        sh(
            "b1",
            "echo A2 > a.txt && echo B > b.txt && rm keep.txt && mkdir -p sub && echo S > sub/s.txt",
        ),
        Turn::new([assistant_message("second done")]),
        sh("c1", "echo A3 > a.txt"),
        Turn::new([assistant_message("third done")]),
        Turn::new([assistant_message("after the revert")]),
    ]);
    let world = World::new(script, &[]).await?;
    std::fs::write(world.ws_file("keep.txt"), "KEEP\n")?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let mut turn_ids = Vec::new();
    for prompt in ["FIRST", "SECOND"] {
        let turn = server.start_turn(&thread_id, prompt).await?;
        server.read_turn_completed(&turn).await?;
        turn_ids.push(turn);
    }
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("a.txt"))? == "A2\n");

    let reverted = server
        .request(
            "thread/revert",
            json!({"threadId": thread_id, "beforeTurnId": turn_ids[1], "restoreFiles": true}),
        )
        .await?;
    anyhow::ensure!(
        reverted["thread"]["turns"].as_array().map(Vec::len) == Some(1),
        "{reverted}"
    );
    let restored = reverted["restoredFiles"].to_string();
    for name in ["a.txt", "b.txt", "keep.txt", "sub/s.txt"] {
        anyhow::ensure!(restored.contains(name), "{restored}");
    }
    server.read_notification("thread/reverted").await?;
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("a.txt"))? == "A1\n");
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("keep.txt"))? == "KEEP\n");
    anyhow::ensure!(!world.ws_file("b.txt").exists() && !world.ws_file("sub/s.txt").exists());

    // Someone else edits a file the next turn changes: that revert restores nothing.
    let turn = server.start_turn(&thread_id, "THIRD").await?;
    server.read_turn_completed(&turn).await?;
    std::fs::write(world.ws_file("a.txt"), "MINE\n")?;
    let refused = server
        .request(
            "thread/revert",
            json!({"threadId": thread_id, "beforeTurnId": turn, "restoreFiles": true}),
        )
        .await;
    let error = match refused {
        Err(keel_test_support::Error::JsonRpc { error, .. }) => error,
        other => anyhow::bail!("expected a refusal, got {other:?}"),
    };
    let message = error["message"].as_str().unwrap_or_default();
    anyhow::ensure!(
        message.contains("changed since") && message.contains("a.txt"),
        "{error}"
    );
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("a.txt"))? == "MINE\n");
    let read = server
        .request(
            "thread/read",
            json!({"threadId": thread_id, "includeTurns": true}),
        )
        .await?;
    anyhow::ensure!(
        read["thread"]["turns"].as_array().map(Vec::len) == Some(2),
        "the refused revert dropped nothing: {read}"
    );

    // Without restoreFiles only the turns go; the model no longer sees them.
    server
        .request(
            "thread/revert",
            json!({"threadId": thread_id, "beforeTurnId": turn}),
        )
        .await?;
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("a.txt"))? == "MINE\n");
    let next = server.start_turn(&thread_id, "FOURTH").await?;
    server.read_turn_completed(&next).await?;
    let requests = world.mock.requests();
    let sent = serde_json::to_string(
        requests
            .last()
            .ok_or_else(|| anyhow::anyhow!("no requests"))?
            .input(),
    )?;
    anyhow::ensure!(
        sent.contains("FIRST") && !sent.contains("SECOND") && !sent.contains("THIRD"),
        "{sent}"
    );

    // Bad input; deleting the thread removes its checkpoints.
    let unknown = server
        .request(
            "thread/revert",
            json!({"threadId": thread_id, "beforeTurnId": "no-such-turn"}),
        )
        .await;
    anyhow::ensure!(
        matches!(&unknown, Err(keel_test_support::Error::JsonRpc { error, .. })
            if error["code"] == -32602 && error["message"].as_str().unwrap_or_default().contains("no-such-turn")),
        "{unknown:?}"
    );
    let checkpoints = world.home.path().join("checkpoints").join(&thread_id);
    anyhow::ensure!(checkpoints.is_dir());
    server
        .request("thread/delete", json!({"threadId": thread_id}))
        .await?;
    anyhow::ensure!(!checkpoints.exists(), "checkpoints outlived the thread");
    Ok(())
}
