//! Codex 0.169's experimental environments on keel app-server: `environment/add` registers a
//! token-protected exec-server, `environment/status` follows its connection, and a thread
//! started with `environments` runs its commands there and reports it. Reserved and empty ids,
//! a token over plain `ws://` to another host, and unknown environments are refused (-32600).
//! The thread's subscribers hear when its connection to the environment is made and lost
//! (`thread/environment/connected` / `disconnected`), and a turn that names another
//! environment moves the thread there.

use std::time::Duration;

use anyhow::Context;
use keel_test_support::{ProcessBuilder, Script, Turn, assistant_message, exec_command_call};
use serde_json::{Value, json};

use super::common::World;

/// The error of request `method` with `params`, which must fail.
async fn refused(
    server: &mut keel_test_support::AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<(i64, String)> {
    let id = server.send_request(method, params).await?;
    let response = server.read_response(id).await?;
    Ok((
        response["error"]["code"].as_i64().unwrap_or_default(),
        response["error"]["message"]
            .as_str()
            .with_context(|| format!("{method} did not fail: {response}"))?
            .to_string(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_environment_runs_a_threads_commands() -> anyhow::Result<()> {
    let secrets = tempfile::tempdir()?;
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, "added-env-token")?;
    let mut exec_server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token_file.to_string_lossy().as_ref())
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", exec_server.websocket_address().await?);
    let script = Script::new([
        Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo added-env-marker", "login": false}),
        )]),
        Turn::new([assistant_message("done")]),
        Turn::new([exec_command_call(
            "c2",
            json!({"cmd": "echo moved-here-marker", "login": false}),
        )]),
        Turn::new([assistant_message("done here")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut app = world.server().await?;

    let added = app
        .request(
            "environment/add",
            json!({"environmentId": "box", "execServerUrl": url, "authBearerToken": "added-env-token"}),
        )
        .await?;
    assert_eq!(added, json!({}));
    // The connection is checked in the background: wait for its outcome.
    let status = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let status = app
                .request("environment/status", json!({"environmentId": "box"}))
                .await?;
            if status["status"] != "pending" {
                return anyhow::Ok(status);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .context("the environment stayed pending")??;
    assert_eq!(status, json!({"status": "ready"}));

    let ws = world.ws().display().to_string();
    // A trusted project hook on this host: it runs only while the thread works here.
    let marks = tempfile::tempdir()?;
    let marker = marks.path().join("project-hook-ran");
    std::fs::create_dir_all(world.ws_file(".codex"))?;
    std::fs::write(
        world.ws_file(".codex/hooks.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("touch {}", marker.display())}]}]}})
        .to_string(),
    )?;
    let started = app
        .request(
            "thread/start",
            json!({
                "cwd": ws,
                "environments": [{"environmentId": "box", "cwd": ws}],
                "config": {"bypass_hook_trust": true, "projects": {&ws: {"trust_level": "trusted"}}},
            }),
        )
        .await?;
    let thread = &started["thread"];
    assert_eq!(
        thread["environments"][0]["environmentId"], "box",
        "{started}"
    );
    let thread_id = thread["id"].as_str().context("thread id")?.to_string();
    let turn = app.start_turn(&thread_id, "run it there").await?;
    let completed = app.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed", "{completed}");
    exec_server
        .wait_for_stderr_line("the thread's command", |line| {
            line.contains("started") && line.contains("added-env-marker")
        })
        .await?;
    assert!(
        !marker.exists(),
        "a local project hook ran for a remote thread"
    );
    // The thread's connection to the environment is announced.
    let connected = app
        .read_notification("thread/environment/connected")
        .await?;
    assert_eq!(
        connected["params"],
        json!({"threadId": thread_id, "environmentId": "box"})
    );

    // Naming the thread's own environment changes nothing; naming none, or an unknown one,
    // is refused.
    let same = app
        .request(
            "thread/settings/update",
            json!({"threadId": thread_id, "environments": [{"environmentId": "box", "cwd": ws}]}),
        )
        .await?;
    assert_eq!(same, json!({}));
    // A directory of the remote host need not exist on this one.
    let remote_cwd = app
        .request(
            "thread/settings/update",
            json!({"threadId": thread_id, "cwd": "/srv/only-on-the-box"}),
        )
        .await?;
    assert_eq!(remote_cwd, json!({}));
    let (code, message) = refused(
        &mut app,
        "thread/settings/update",
        json!({"threadId": thread_id, "environments": []}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(message.contains("without an environment"), "{message}");
    let (code, message) = refused(
        &mut app,
        "turn/start",
        json!({
            "threadId": thread_id,
            "input": [{"type": "text", "text": "run it nowhere"}],
            "environments": [{"environmentId": "nowhere", "cwd": ws}],
        }),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(
        message.contains("unknown turn environment id `nowhere`"),
        "{message}"
    );

    // The exec-server goes away: the thread's subscribers are told.
    exec_server.kill().await?;
    let disconnected = app
        .read_notification("thread/environment/disconnected")
        .await?;
    assert_eq!(
        disconnected["params"],
        json!({"threadId": thread_id, "environmentId": "box"})
    );

    // A turn that names another environment moves the thread there: with the remote server
    // gone, its command can only have run on this host.
    let moved = app
        .request(
            "turn/start",
            json!({
                "threadId": thread_id,
                "input": [{"type": "text", "text": "now run it here"}],
                "environments": [{"environmentId": "local", "cwd": ws}],
            }),
        )
        .await?;
    let moved_turn = moved["turn"]["id"].as_str().context("turn id")?.to_string();
    let completed = app.read_turn_completed(&moved_turn).await?;
    assert_eq!(completed["turn"]["status"], "completed", "{completed}");
    let output = world
        .mock
        .requests()
        .iter()
        .find_map(|request| request.tool_output("c2").cloned())
        .context("the moved turn's command has no output")?;
    assert!(
        marker.exists(),
        "the project's hook did not run once the thread moved here"
    );
    let output = output.as_str().unwrap_or_default();
    assert!(output.contains("exited with code 0"), "{output}");
    assert!(output.contains("moved-here-marker\n"), "{output}");
    assert!(!output.contains("exec-server"), "{output}");
    let read = app
        .request("thread/read", json!({"threadId": thread_id}))
        .await?;
    assert_eq!(
        read["thread"]["environments"][0]["environmentId"], "local",
        "{read}"
    );
    // Here, a working directory must exist.
    let (code, message) = refused(
        &mut app,
        "thread/settings/update",
        json!({"threadId": thread_id, "cwd": "/srv/only-on-the-box"}),
    )
    .await?;
    assert_eq!(code, -32602);
    assert!(
        message.contains("not an absolute path to a directory"),
        "{message}"
    );

    // What is refused, and how.
    let (code, message) = refused(
        &mut app,
        "environment/add",
        json!({"environmentId": "local", "execServerUrl": url}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(message.contains("reserved"), "{message}");
    let (code, message) = refused(
        &mut app,
        "environment/add",
        json!({"environmentId": " ", "execServerUrl": url}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(message.contains("cannot be empty"), "{message}");
    let (code, message) = refused(
        &mut app,
        "environment/add",
        json!({"environmentId": "far", "execServerUrl": "ws://192.0.2.7:4500", "authBearerToken": "t"}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(message.contains("wss://"), "{message}");
    let unknown = app
        .request("environment/status", json!({"environmentId": "nowhere"}))
        .await?;
    assert_eq!(
        unknown,
        json!({"status": "unknown", "error": "unknown environment id `nowhere`"})
    );
    let local = app
        .request("environment/status", json!({"environmentId": "local"}))
        .await?;
    assert_eq!(local, json!({"status": "ready"}));
    let (code, message) = refused(
        &mut app,
        "thread/start",
        json!({"cwd": ws, "environments": [{"environmentId": "nowhere", "cwd": ws}]}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(
        message.contains("unknown turn environment id `nowhere`"),
        "{message}"
    );
    let (code, message) = refused(
        &mut app,
        "thread/start",
        json!({"cwd": ws, "environments": [{"environmentId": "box", "cwd": "relative"}]}),
    )
    .await?;
    assert_eq!(code, -32600);
    assert!(
        message.contains("invalid cwd for environment `box`"),
        "{message}"
    );

    Ok(())
}

/// The parent spawns a sub-agent and waits for it; the sub-agent runs one command.
fn parent_and_child(request: &keel_test_support::CapturedRequest) -> Option<Turn> {
    let text = crate::suite::agents::input_text(request);
    if text.contains("CHILD-TASK") {
        if request.tool_output("k1").is_none() {
            return Some(Turn::new([exec_command_call(
                "k1",
                json!({"cmd": "echo child-ran-marker", "login": false}),
            )]));
        }
        return Some(Turn::new([assistant_message("child done")]));
    }
    let spawned = request
        .tool_output("s1")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| v["agent_id"].as_str().map(str::to_string));
    let Some(id) = spawned else {
        return Some(Turn::new([keel_test_support::function_call(
            "s1",
            "spawn_agent",
            json!({"message": "CHILD-TASK: run it"}).to_string(),
        )]));
    };
    if request.tool_output("w1").is_none() {
        return Some(Turn::new([keel_test_support::function_call(
            "w1",
            "wait_agent",
            json!({"ids": [id], "timeout_ms": 60000}).to_string(),
        )]));
    }
    Some(Turn::new([assistant_message("parent done")]))
}

/// A thread that moved to another environment takes its sub-agents with it: the sub-agent's
/// command runs on the exec-server the parent moved to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_spawned_after_a_move_runs_where_its_parent_now_runs() -> anyhow::Result<()> {
    let mut exec_server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", exec_server.websocket_address().await?);
    let mock = keel_test_support::MockModelServer::builder()
        .responder(parent_and_child)
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let mut app = world.server().await?;
    let added = app
        .request(
            "environment/add",
            json!({"environmentId": "box", "execServerUrl": url}),
        )
        .await?;
    assert_eq!(added, json!({}));
    let ws = world.ws().display().to_string();
    // Started here, moved to `box` by its first turn.
    let started = app.request("thread/start", json!({"cwd": ws})).await?;
    let thread_id = started["thread"]["id"]
        .as_str()
        .context("thread id")?
        .to_string();
    let turn = app
        .request(
            "turn/start",
            json!({
                "threadId": thread_id,
                "input": [{"type": "text", "text": "delegate"}],
                "environments": [{"environmentId": "box", "cwd": ws}],
            }),
        )
        .await?;
    let turn_id = turn["turn"]["id"].as_str().context("turn id")?.to_string();
    let completed = app.read_turn_completed(&turn_id).await?;
    assert_eq!(completed["turn"]["status"], "completed", "{completed}");
    exec_server
        .wait_for_stderr_line("the sub-agent's command on the server", |line| {
            line.contains("started") && line.contains("child-ran-marker")
        })
        .await?;
    Ok(())
}
