//! `keel acp` given bad input over its real stdio, as a careless or hostile editor would send
//! it: each line gets an error naming the problem (a line that is not JSON `-32700` with id
//! `null`, JSON with an id but no method `-32600` with that id, an unknown method `-32601`,
//! bad params `-32602` naming them), stdout carries nothing but protocol lines, and the
//! connection keeps serving: a good request after them all is answered.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::app_server::common::World;

/// Ample for one answer on a busy machine.
const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_get_errors_naming_the_problem_and_the_editor_is_still_served()
-> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let world = World::with_mock(mock, &[])?;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .arg("acp")
        .env("KEEL_HOME", world.home.path())
        .current_dir(world.ws())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let mut exchange = async |line: &str| -> anyhow::Result<Value> {
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await?;
        let answer = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .context("no answer")??
            .context("keel acp closed its output")?;
        serde_json::from_str(&answer).with_context(|| format!("not JSON on stdout: {answer}"))
    };

    let garbage = exchange("this is not json {").await?;
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    assert_eq!(garbage["id"], Value::Null);

    let no_method = exchange(r#"{"jsonrpc":"2.0","id":7,"params":{}}"#).await?;
    assert_eq!(no_method["error"]["code"], -32600, "{no_method}");
    assert_eq!(no_method["id"], 7);

    let unknown = exchange(r#"{"jsonrpc":"2.0","id":8,"method":"session/teleport"}"#).await?;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("session/teleport")),
        "{unknown}"
    );

    let relative = exchange(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "session/new",
            "params": {"cwd": "not/absolute", "mcpServers": []}})
        .to_string(),
    )
    .await?;
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(
        relative["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("not/absolute")),
        "{relative}"
    );

    let missing = exchange(
        &json!({"jsonrpc": "2.0", "id": 10, "method": "session/prompt",
            "params": {"sessionId": "s"}})
        .to_string(),
    )
    .await?;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("prompt")),
        "{missing}"
    );

    let relative_dir = exchange(
        &json!({"jsonrpc": "2.0", "id": 11, "method": "session/new",
            "params": {"cwd": world.ws(), "mcpServers": [], "additionalDirectories": ["rel"]}})
        .to_string(),
    )
    .await?;
    assert_eq!(relative_dir["error"]["code"], -32602, "{relative_dir}");

    // Still serving.
    let init = exchange(
        &json!({"jsonrpc": "2.0", "id": 12, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}})
        .to_string(),
    )
    .await?;
    assert_eq!(init["id"], 12, "{init}");
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await??;
    assert!(status.success(), "{status}");
    Ok(())
}
