//! The `keel-mock-model` binary serving a JSON script.

use std::process::Stdio;

use anyhow::Context;
use keel_test_support::cargo_bin;
use pretty_assertions::assert_eq;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::common::{WAIT, responses_body, stream};

#[tokio::test]
async fn the_binary_serves_a_json_script_and_prints_its_uri() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"items": [{"type": "shell_call", "call_id": "call-1", "command": ["echo", "hi"]}]}]"#,
    )?;
    let capture = dir.path().join("capture.jsonl");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel-mock-model"))
        .arg("--script")
        .arg(&script)
        .arg("--capture")
        .arg(&capture)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let uri = tokio::time::timeout(WAIT, lines.next_line())
        .await??
        .context("no URI line")?;
    assert!(
        uri.starts_with("http://127.0.0.1:") && uri.ends_with("/v1"),
        "{uri}"
    );

    let outcome = stream(&uri, "/responses", &responses_body("hi")).await?;
    let call = outcome
        .events
        .iter()
        .find(|e| e.event == "response.output_item.done")
        .map(super::common::Received::json)
        .unwrap_or_default();
    assert_eq!(call["item"]["call_id"], "call-1");
    child.kill().await?;
    Ok(())
}

#[test]
fn the_binary_can_be_found_from_the_target_dir() -> anyhow::Result<()> {
    let found = cargo_bin("keel-mock-model")?;
    assert_eq!(
        found.file_name().and_then(|n| n.to_str()),
        Some("keel-mock-model")
    );
    Ok(())
}
