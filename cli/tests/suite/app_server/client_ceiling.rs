//! The operator's ceiling on clients (`[app_server] clients_within_sandbox`), tried as an
//! attacker holding a connection would: every route that widened what a client could write
//! on a `read-only` or `workspace-write` server is refused with `-32602` naming the ceiling,
//! and nothing is written. Without the ceiling (the default) a client is trusted as the user,
//! as the Codex TUI expects.

use base64::Engine as _;
use keel_test_support::{AppServerProcess, Script};
use serde_json::{Value, json};

use super::common::World;

/// The error of a request that must fail.
async fn refused(
    server: &mut AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<String> {
    let id = server.send_request(method, params).await?;
    let response = server.read_response(id).await?;
    anyhow::ensure!(
        response["error"]["code"] == -32602,
        "{method} was not refused: {response}"
    );
    let message = response["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(
        message.contains("clients_within_sandbox"),
        "{method}: {message}"
    );
    Ok(message)
}

fn ceiling(mode: &str) -> Vec<(&'static str, toml::Value)> {
    vec![
        ("sandbox_mode", mode.into()),
        ("app_server.clients_within_sandbox", true.into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_holds_every_client_route_within_its_sandbox() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &ceiling("read-only")).await?;
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let target = outside.path().join("pwned");
    let mut server = world.server().await?;

    // A wider thread, by mode or by a configuration override.
    let mut params = world.thread_params();
    params["sandbox"] = json!("workspace-write");
    refused(&mut server, "thread/start", params).await?;
    let mut params = world.thread_params();
    params["config"] = json!({"sandbox_mode": "danger-full-access"});
    refused(&mut server, "thread/start", params).await?;
    let mut params = world.thread_params();
    params["config"] = json!({"shell_environment_policy.set.TMPDIR": outside.path()});
    refused(&mut server, "thread/start", params).await?;

    // A thread within it, then a wider turn or setting.
    let thread_id = server.start_thread(world.thread_params()).await?;
    refused(
        &mut server,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hi"}],
               "sandboxPolicy": {"type": "workspaceWrite", "writableRoots": [outside.path()]}}),
    )
    .await?;
    refused(
        &mut server,
        "thread/settings/update",
        json!({"threadId": thread_id, "sandboxPolicy": {"type": "dangerFullAccess"}}),
    )
    .await?;

    // The configuration file, files, and commands.
    refused(
        &mut server,
        "config/value/write",
        json!({"keyPath": "sandbox_mode", "value": "danger-full-access", "mergeStrategy": "replace"}),
    )
    .await?;
    let data = base64::engine::general_purpose::STANDARD.encode("pwned");
    refused(
        &mut server,
        "fs/writeFile",
        json!({"path": target, "dataBase64": data}),
    )
    .await?;
    refused(
        &mut server,
        "command/exec",
        json!({"command": ["touch", target], "cwd": world.ws(),
               "sandboxPolicy": {"type": "workspaceWrite", "writableRoots": [outside.path()]}}),
    )
    .await?;
    assert!(!target.exists(), "a client wrote past the ceiling");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_write_server_keeps_cwd_and_tmpdir_within_its_roots() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &ceiling("workspace-write")).await?;
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let target = outside.path().join("pwned");
    let mut server = world.server().await?;
    let message = refused(&mut server, "thread/start", json!({"cwd": "/"})).await?;
    assert!(message.contains("/ would be writable"), "{message}");
    refused(
        &mut server,
        "command/exec",
        json!({"command": ["touch", target], "cwd": world.ws(),
               "env": {"TMPDIR": outside.path()}}),
    )
    .await?;
    refused(
        &mut server,
        "fs/writeFile",
        json!({"path": target, "dataBase64": "eA=="}),
    )
    .await?;
    refused(
        &mut server,
        "feedback/save",
        json!({"classification": "bug", "savePath": target}),
    )
    .await?;
    // An import would write the project's AGENTS.md: outside the roots it fails, unwritten.
    std::fs::write(outside.path().join("CLAUDE.md"), "rules\n")?;
    server
        .request(
            "externalAgentConfig/import",
            json!({"migrationItems": [{"itemType": "AGENTS_MD", "description": "d",
                                       "cwd": outside.path()}]}),
        )
        .await?;
    let completed = server
        .read_notification("externalAgentConfig/import/completed")
        .await?;
    let failure = &completed["params"]["itemTypeResults"][0]["failures"][0];
    assert!(
        failure["message"]
            .as_str()
            .is_some_and(|m| m.contains("clients_within_sandbox")),
        "{completed}"
    );
    assert!(!outside.path().join("AGENTS.md").exists());
    // Inside the roots, all of it works.
    let inside = world.ws_file("made.txt");
    server
        .request(
            "fs/writeFile",
            json!({"path": inside, "dataBase64": "eA=="}),
        )
        .await?;
    assert!(inside.exists());
    server.start_thread(world.thread_params()).await?;
    assert!(!target.exists(), "a client wrote past the ceiling");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_ceiling_a_client_is_trusted_as_the_user() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[("sandbox_mode", "read-only".into())]).await?;
    let mut server = world.server().await?;
    let mut params = world.thread_params();
    params["sandbox"] = json!("workspace-write");
    server.start_thread(params).await?;
    let made = world.ws_file("made.txt");
    server
        .request("fs/writeFile", json!({"path": made, "dataBase64": "eA=="}))
        .await?;
    assert!(made.exists());
    Ok(())
}
