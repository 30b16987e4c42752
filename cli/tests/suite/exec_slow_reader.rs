//! A pipe reader slower than the model gets every event of `keel exec`: the run waits for
//! it instead of dropping streaming deltas.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use pretty_assertions::assert_eq;
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(120);
/// Words in the answer: one delta each, several times what the in-process queue holds.
const WORDS: usize = 20_000;
/// How long the reader stops reading after the first line (the model streams meanwhile).
const READER_PAUSE: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_of_the_event_stream_receives_every_delta() -> anyhow::Result<()> {
    let answer: String = (0..WORDS).map(|i| format!("w{i} ")).collect();
    let answer = answer.trim_end().to_string();
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message(&answer)])])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec", "--app-server-events", "write a long answer"])
        .current_dir(ws.path())
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let read = async {
        let first = lines.next_line().await?.context("no first line")?;
        // The slow part of a slow reader: while it does something else, the model's whole
        // answer arrives and the pipe fills.
        tokio::time::sleep(READER_PAUSE).await;
        let mut all = vec![first];
        while let Some(line) = lines.next_line().await? {
            all.push(line);
        }
        anyhow::Ok(all)
    };
    let all = tokio::time::timeout(WAIT, read)
        .await
        .context("keel exec did not finish")??;
    let status = tokio::time::timeout(WAIT, child.wait()).await??;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        tokio::io::AsyncReadExt::read_to_string(&mut pipe, &mut stderr).await?;
    }
    assert_eq!(status.code(), Some(0), "stderr: {stderr}");
    let mut streamed = String::new();
    let mut deltas = 0;
    for line in &all {
        let value: serde_json::Value = serde_json::from_str(line)?;
        if value["method"] == "item/agentMessage/delta" {
            deltas += 1;
            streamed.push_str(value["params"]["delta"].as_str().unwrap_or_default());
        }
    }
    assert_eq!(deltas, WORDS, "stderr: {stderr}");
    assert_eq!(streamed, answer);
    assert!(!stderr.contains("skipped"), "stderr: {stderr}");
    Ok(())
}
