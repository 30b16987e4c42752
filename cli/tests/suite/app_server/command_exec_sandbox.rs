//! `command/exec` runs under the sandbox it was promised, tried as an attacker would: the
//! server's configured `sandbox_mode` when the request names none, the request's
//! `sandboxPolicy` when it does, and full access only when the server itself has it.

use keel_test_support::Script;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

/// A directory outside every writable root of the policies below (they turn off the `/tmp`
/// and `$TMPDIR` roots, so this holds wherever the checkout lives).
fn outside_dir() -> anyhow::Result<tempfile::TempDir> {
    Ok(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?)
}

/// `sh -c 'echo pwned > FILE'`, run in the workspace.
fn write_request(world: &World, file: &std::path::Path, policy: Option<Value>) -> Value {
    let mut params = json!({
        "command": ["sh", "-c", format!("echo pwned > '{}'", file.display())],
        "cwd": world.ws(),
    });
    if let Some(policy) = policy {
        params["sandboxPolicy"] = policy;
    }
    params
}

fn workspace_write() -> Value {
    json!({"type": "workspaceWrite", "excludeSlashTmp": true, "excludeTmpdirEnvVar": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_read_only_mode_confines_command_exec() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[("sandbox_mode", "read-only".into())]).await?;
    let mut server = world.server().await?;
    let outside = outside_dir()?;
    for target in [outside.path().join("f"), world.ws_file("in-workspace")] {
        let result = server
            .request("command/exec", write_request(&world, &target, None))
            .await?;
        assert_ne!(result["exitCode"], 0, "{result}");
        assert!(!target.exists(), "{} was written", target.display());
    }
    // Reading still works.
    let result = server
        .request(
            "command/exec",
            json!({"command": ["echo", "read-only"], "cwd": world.ws()}),
        )
        .await?;
    assert_eq!(result["stdout"], "read-only\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_sandbox_policy_is_enforced() -> anyhow::Result<()> {
    // The server itself has full access; the request asks for less, and gets it.
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let outside = outside_dir()?;

    let read_only = json!({"type": "readOnly"});
    let target = world.ws_file("ro.txt");
    let result = server
        .request(
            "command/exec",
            write_request(&world, &target, Some(read_only)),
        )
        .await?;
    assert_ne!(result["exitCode"], 0, "{result}");
    assert!(!target.exists());

    let inside = world.ws_file("ok.txt");
    let result = server
        .request(
            "command/exec",
            write_request(&world, &inside, Some(workspace_write())),
        )
        .await?;
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(std::fs::read_to_string(&inside)?, "pwned\n");

    let escaped = outside.path().join("f");
    let result = server
        .request(
            "command/exec",
            write_request(&world, &escaped, Some(workspace_write())),
        )
        .await?;
    assert_ne!(result["exitCode"], 0, "{result}");
    assert!(!escaped.exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_access_is_refused_unless_the_server_has_it() -> anyhow::Result<()> {
    let world = World::new(
        Script::new([]),
        &[("sandbox_mode", "workspace-write".into())],
    )
    .await?;
    let mut server = world.server().await?;
    let outside = outside_dir()?;
    let escaped = outside.path().join("f");
    let error = server
        .request(
            "command/exec",
            write_request(&world, &escaped, Some(json!({"type": "dangerFullAccess"}))),
        )
        .await
        .err()
        .map(|err| err.to_string())
        .unwrap_or_default();
    assert!(error.contains("-32602"), "{error}");
    assert!(error.contains("danger-full-access"), "{error}");
    assert!(!escaped.exists());
    Ok(())
}
