//! `thread/shellCommand` (the TUI's `!cmd`): the user's command runs in the thread's working
//! directory under the thread's sandbox — tried as an attacker would, with a write outside
//! the workspace — yet reaches local daemons' sockets as the user's terminal does, shows as a
//! `userShell` command item, and the model sees it next turn.

use keel_test_support::{Script, Turn, assistant_message};
use serde_json::{Value, json};

use super::common::{World, methods, until_turn_completed};

/// Runs `command` on an idle thread; returns its turn's messages and the command item.
async fn shell_turn(
    server: &mut keel_test_support::AppServerProcess,
    thread_id: &str,
    params: Value,
) -> anyhow::Result<(Vec<Value>, Value)> {
    let mut params = params;
    params["threadId"] = json!(thread_id);
    let answer = server.request("thread/shellCommand", params).await?;
    anyhow::ensure!(answer == json!({}), "{answer}");
    let started = server.read_notification("turn/started").await?;
    let turn_id = started["params"]["turn"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let messages = until_turn_completed(server, &turn_id).await?;
    let item = messages
        .iter()
        .find(|m| {
            m["method"] == "item/completed" && m["params"]["item"]["type"] == "commandExecution"
        })
        .map(|m| m["params"]["item"].clone())
        .ok_or_else(|| anyhow::anyhow!("no command item: {:?}", methods(&messages)))?;
    Ok((messages, item))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_command_runs_confined_and_the_model_sees_it() -> anyhow::Result<()> {
    let world = World::new(
        Script::new([Turn::new([assistant_message("noted")])]),
        &[
            ("sandbox_mode", "workspace-write".into()),
            ("sandbox_workspace_write.exclude_slash_tmp", true.into()),
            (
                "sandbox_workspace_write.exclude_tmpdir_env_var",
                true.into(),
            ),
        ],
    )
    .await?;
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;

    let (messages, item) = shell_turn(
        &mut server,
        &thread_id,
        json!({"command": "echo made > inside.txt && echo USER-SAW-THIS"}),
    )
    .await?;
    anyhow::ensure!(item["source"] == "userShell", "{item}");
    anyhow::ensure!(
        item["status"] == "completed" && item["exitCode"] == 0,
        "{item}"
    );
    let output = item["aggregatedOutput"].as_str().unwrap_or_default();
    anyhow::ensure!(output.contains("USER-SAW-THIS"), "{item}");
    anyhow::ensure!(std::fs::read_to_string(world.ws_file("inside.txt"))? == "made\n");
    anyhow::ensure!(
        !methods(&messages)
            .iter()
            .any(|m| m == "item/agentMessage/delta"),
        "no model request for a shell command"
    );

    // Outside the workspace the thread's sandbox says no.
    let target = outside.path().join("pwned");
    let (_, item) = shell_turn(
        &mut server,
        &thread_id,
        json!({"command": format!("echo pwned > '{}'", target.display())}),
    )
    .await?;
    anyhow::ensure!(item["status"] == "failed", "{item}");
    anyhow::ensure!(!target.exists(), "the user's command escaped the sandbox");

    // Unlike a model's command, the user's reaches local daemons (`!docker ps`, `!ssh-add
    // -l`): here a unix socket the test listens on.
    if cfg!(keel_python3) {
        let sockets = tempfile::tempdir()?;
        let path = sockets.path().join("daemon.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path)?;
        let accepted = std::thread::spawn(move || listener.accept().map(|_| ()));
        let probe = format!(
            "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect({:?}); \
             print(\"DAEMON-REACHED\")'",
            path.display().to_string()
        );
        let (_, item) = shell_turn(&mut server, &thread_id, json!({ "command": probe })).await?;
        let output = item["aggregatedOutput"].as_str().unwrap_or_default();
        anyhow::ensure!(output.contains("DAEMON-REACHED"), "{item}");
        accepted
            .join()
            .map_err(|_| anyhow::anyhow!("the listener thread panicked"))??;
    }

    // A command that runs too long is stopped.
    let (_, item) = shell_turn(
        &mut server,
        &thread_id,
        json!({"command": "sleep 30", "timeoutMs": 300}),
    )
    .await?;
    anyhow::ensure!(item["status"] == "failed", "{item}");

    // The next model request has the user's commands and what they printed.
    let turn = server.start_turn(&thread_id, "what did I run?").await?;
    server.read_turn_completed(&turn).await?;
    let requests = world.mock.requests();
    anyhow::ensure!(requests.len() == 1, "{} requests", requests.len());
    let sent = serde_json::to_string(requests[0].input())?;
    anyhow::ensure!(
        sent.contains("<user_shell_command>") && sent.contains("USER-SAW-THIS"),
        "{sent}"
    );
    anyhow::ensure!(sent.contains("timed out"), "{sent}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_shell_commands_are_refused() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let cases = [
        (
            json!({"threadId": thread_id, "command": "   "}),
            "must not be empty",
        ),
        (
            json!({"threadId": thread_id, "command": "true", "timeoutMs": -5}),
            "must not be negative",
        ),
        (
            json!({"threadId": "00000000-0000-7000-8000-000000000000", "command": "true"}),
            "not loaded",
        ),
    ];
    for (params, expected) in cases {
        let result = server.request("thread/shellCommand", params.clone()).await;
        let error = match result {
            Err(keel_test_support::Error::JsonRpc { error, .. }) => error,
            other => anyhow::bail!("{params}: expected an error, got {other:?}"),
        };
        let message = error["message"].as_str().unwrap_or_default();
        anyhow::ensure!(message.contains(expected), "{params}: {error}");
    }
    Ok(())
}
