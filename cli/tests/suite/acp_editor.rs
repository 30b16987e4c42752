//! Running the editor-like clients of the `keel acp` tests (Node scripts on the official ACP
//! SDK, `tests/fixtures/acp_*.mjs`) and reading the one JSON report each prints.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use super::app_server::common::World;

/// `node <fixture> <sdk> <keel>` for `world`'s Keel home; the caller adds the script's own
/// arguments and environment.
pub fn editor_command(fixture: &str, world: &World) -> anyhow::Result<tokio::process::Command> {
    let sdk = std::env::var("KEEL_ACP_SDK")
        .context("KEEL_ACP_SDK must name the SDK's dist/v1/stable/acp.js")?;
    let script = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script)
        .arg(sdk)
        .arg(env!("CARGO_BIN_EXE_keel"))
        .env("KEEL_HOME", world.home.path())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    Ok(command)
}

/// Runs the script to its end (at most `wait`) and returns its report.
pub async fn editor_report(
    mut command: tokio::process::Command,
    wait: Duration,
) -> anyhow::Result<Value> {
    let output = tokio::time::timeout(wait, command.output())
        .await
        .context("the editor script did not finish")??;
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(output.status.success(), "node failed: {stderr}");
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("not JSON: {}", String::from_utf8_lossy(&output.stdout)))
}
