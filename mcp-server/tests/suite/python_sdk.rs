//! A real third-party client: the official Python MCP SDK drives the server.
//!
//! Runs when `KEEL_MCP_PYTHON` names a Python with the `mcp` package (`.ci/run` creates one in
//! `target/mcp-venv` and sets it) and whenever `CI` is set, where a missing client fails the
//! test. Elsewhere `cargo test` reports it as ignored with the reason (see `build.rs`), so the
//! workspace's tests pass on a fresh machine without network access and never count it as
//! passed when it did not run.

use std::process::Stdio;
use std::time::Duration;

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, shell_call, write_config,
};
use pretty_assertions::assert_eq;

use super::common::SERVER_BIN;

const CLIENT_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/sdk_client.py");
const HTTP_CLIENT_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/python/sdk_http_client.py"
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_python),
    ignore = "needs KEEL_MCP_PYTHON: a Python with the MCP SDK (.ci/run makes one)"
)]
async fn python_sdk_lists_calls_and_accepts_the_approval() -> anyhow::Result<()> {
    let python = std::env::var_os("KEEL_MCP_PYTHON")
        .filter(|value| !value.is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "KEEL_MCP_PYTHON is not set; this test needs a Python with the MCP SDK:\n  \
                 python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install 'mcp>=2,<3'\n  \
                 KEEL_MCP_PYTHON=$PWD/target/mcp-venv/bin/python cargo test -p keel-mcp-server python_sdk"
            )
        })?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([shell_call(
            "c1",
            ["bash", "-lc", "echo from-python > py.txt"],
        )]),
        Turn::new([assistant_message("python client done")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), [("approval_policy", "untrusted")])?;
    let ws = home.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    let child = tokio::process::Command::new(&python)
        .arg(CLIENT_SCRIPT)
        .arg(SERVER_BIN)
        .arg(home.path())
        .arg(&ws)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output()).await??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python client failed\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}"
    );
    assert!(
        stdout.contains("TOOLS codex,codex-reply"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("ELICITED") && stdout.contains("echo from-python"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("RESULT python client done"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("py.txt"))?, "from-python\n");
    mock.verify()?;
    Ok(())
}

/// The SDK over Streamable HTTP, in both of its connect modes: `auto` probes
/// `server/discover` and speaks the stateless 2026-07-28 revision; `legacy` opens a
/// 2025-11-25 session. Each calls `codex`, accepts its approval (an `input_required` round on
/// 2026-07-28, an elicitation request in a session) and continues the thread with
/// `codex-reply`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_python),
    ignore = "needs KEEL_MCP_PYTHON: a Python with the MCP SDK (.ci/run makes one)"
)]
async fn python_sdk_over_http_in_both_revisions() -> anyhow::Result<()> {
    let python = std::env::var_os("KEEL_MCP_PYTHON")
        .filter(|value| !value.is_empty())
        .ok_or_else(|| anyhow::anyhow!("KEEL_MCP_PYTHON is not set (see the test above)"))?;
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let server = super::http_client::HttpServer::start(
            Script::new([
                Turn::new([shell_call("c1", ["bash", "-lc", "echo over-http > py.txt"])]),
                Turn::new([assistant_message("first answer")]),
                Turn::new([assistant_message("second answer")]),
            ]),
            &[],
        )
        .await?;
        let child = tokio::process::Command::new(&python)
            .arg(HTTP_CLIENT_SCRIPT)
            .arg(&server.url)
            .arg(&server.ws)
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let output =
            tokio::time::timeout(Duration::from_secs(120), child.wait_with_output()).await??;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{mode}: python client failed\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}"
        );
        for line in [
            format!("PROTOCOL {protocol}"),
            "TOOLS codex,codex-reply".to_string(),
            // The SDK's MRTR path keeps only the standard elicitation fields, so the
            // `codex_elicitation` kind is checked in the keel-mcp-server HTTP tests instead.
            ": Allow Keel to run `bash -lc 'echo over-http > py.txt'`".to_string(),
            "RESULT first answer".to_string(),
            "REPLY second answer".to_string(),
        ] {
            assert!(
                stdout.contains(&line),
                "{mode}: no `{line}`\n{stdout}\n{stderr}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(server.ws.join("py.txt"))?,
            "over-http\n"
        );
    }
    Ok(())
}
