//! `keel exec --json` prints `codex exec --json`'s JSON Lines (Codex 0.169): a consumer
//! written for Codex's stream reads Keel's unchanged.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    Fault, MockModelServer, Script, Turn, Usage, apply_patch_call, assistant_message, reasoning,
    shell_call, write_config,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::exec::keel_exec;

const WAIT: Duration = Duration::from_secs(60);

/// The consumer written for Codex's stream (Python, in the repository's fixtures).
const SUMMARIZE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../test-support/fixtures/codex-exec-json/summarize.py"
);

fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_tokens: cached,
        output_tokens: output,
        reasoning_tokens: reasoning,
    }
}

/// A turn that thinks, runs a failing command, patches two files and answers.
fn working_script() -> Script {
    Script::new([
        Turn::new([
            reasoning("I will run a command."),
            shell_call("c1", ["bash", "-lc", "echo hi; exit 3"]),
        ])
        .with_usage(usage(100, 0, 10, 5)),
        Turn::new([apply_patch_call(
            "p1",
            "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: old.txt\n@@\n-old line\n+new line\n*** End Patch\n",
        )])
        .with_usage(usage(200, 100, 12, 0)),
        Turn::new([assistant_message("Done: patched.")]).with_usage(usage(300, 200, 8, 0)),
    ])
}

async fn setup(
    script: Script,
) -> anyhow::Result<(MockModelServer, tempfile::TempDir, tempfile::TempDir)> {
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    std::fs::write(ws.path().join("old.txt"), "old line\n")?;
    Ok((mock, home, ws))
}

fn events(stdout: &str) -> anyhow::Result<Vec<Value>> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).with_context(|| format!("not JSON: {line}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_has_codex_events_items_and_usage() -> anyhow::Result<()> {
    let (_mock, home, ws) = setup(working_script()).await?;
    let out = keel_exec(home.path(), ws.path(), &["--json", "do the work"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let events = events(&out.stdout)?;
    let thread_id = events[0]["thread_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(events[0]["type"], "thread.started");
    assert!(uuid_like(&thread_id), "{thread_id}");
    let cwd = std::fs::canonicalize(ws.path())?;
    let path = |name: &str| cwd.join(name).display().to_string();
    assert_eq!(
        events[1..].to_vec(),
        vec![
            json!({"type": "turn.started"}),
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "I will run a command."}}),
            json!({"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc 'echo hi; exit 3'", "aggregated_output": "", "exit_code": null, "status": "in_progress"}}),
            json!({"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc 'echo hi; exit 3'", "aggregated_output": "hi\n", "exit_code": 3, "status": "failed"}}),
            json!({"type": "item.started", "item": {"id": "item_2", "type": "file_change", "changes": [{"path": path("new.txt"), "kind": "add"}, {"path": path("old.txt"), "kind": "update"}], "status": "in_progress"}}),
            json!({"type": "item.completed", "item": {"id": "item_2", "type": "file_change", "changes": [{"path": path("new.txt"), "kind": "add"}, {"path": path("old.txt"), "kind": "update"}], "status": "completed"}}),
            json!({"type": "item.completed", "item": {"id": "item_3", "type": "agent_message", "text": "Done: patched."}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 600, "cached_input_tokens": 300, "cache_write_input_tokens": 0, "output_tokens": 30, "reasoning_output_tokens": 5}}),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("old.txt"))?,
        "new line\n"
    );

    // The thread id resumes the session, and the resumed run starts with the same id; as
    // in Codex, the usage is the thread's running total.
    let script =
        Script::new([Turn::new([assistant_message("again")]).with_usage(usage(10, 0, 1, 0))]);
    let mock = MockModelServer::start(script).await?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let resumed = keel_exec(
        home.path(),
        ws.path(),
        &["--json", "resume", &thread_id, "once more"],
        None,
    )
    .await?;
    assert_eq!(resumed.code, Some(0), "stderr: {}", resumed.stderr);
    let resumed = self::events(&resumed.stdout)?;
    assert_eq!(
        resumed[0],
        json!({"type": "thread.started", "thread_id": thread_id})
    );
    assert_eq!(
        resumed[2],
        json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "again"}})
    );
    assert_eq!(
        resumed[3],
        json!({"type": "turn.completed", "usage": {"input_tokens": 610, "cached_input_tokens": 300, "cache_write_input_tokens": 0, "output_tokens": 31, "reasoning_output_tokens": 5}})
    );
    Ok(())
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_ends_with_error_and_turn_failed() -> anyhow::Result<()> {
    let script = Script::new([Turn::failing(Fault::ResponseFailed {
        code: "server_error".into(),
        message: "The server had an error processing your request.".into(),
    })]);
    let (_mock, home, ws) = setup(script).await?;
    let out = keel_exec(home.path(), ws.path(), &["--json", "fail"], None).await?;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    let events = events(&out.stdout)?;
    let n = events.len();
    assert!(n >= 4, "{events:?}");
    assert_eq!(events[n - 2]["type"], "error");
    assert_eq!(events[n - 1]["type"], "turn.failed");
    let message = events[n - 1]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("The server had an error processing your request."),
        "{message}"
    );
    assert_eq!(events[n - 2]["message"], message);
    Ok(())
}

/// A consumer written against `codex exec --json` (it reads Codex 0.169's output the same
/// way) runs unchanged on Keel's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_python3), ignore = "needs python3 on PATH")]
async fn a_script_written_for_codex_exec_json_reads_keel_exec_json() -> anyhow::Result<()> {
    let (_mock, home, ws) = setup(working_script()).await?;
    let out = keel_exec(home.path(), ws.path(), &["--json", "do the work"], None).await?;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let summary = run_consumer(&out.stdout).await?;
    let thread = summary.lines().next().unwrap_or_default().to_string();
    assert!(thread.starts_with("thread "), "{summary}");
    assert_eq!(
        summary,
        format!(
            "{thread}\nturn started\nthought: I will run a command.\n\
             ran: bash -lc 'echo hi; exit 3' -> 3 (failed) hi\n\
             file: add new.txt (completed)\nfile: update old.txt (completed)\n\
             tokens: 600 in (300 cached), 30 out\nanswer: Done: patched.\n"
        )
    );
    Ok(())
}

async fn run_consumer(stream: &str) -> anyhow::Result<String> {
    let mut child = tokio::process::Command::new("python3")
        .arg(Path::new(SUMMARIZE))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    stdin.write_all(stream.as_bytes()).await?;
    drop(stdin);
    let output = tokio::time::timeout(WAIT, child.wait_with_output()).await??;
    anyhow::ensure!(
        output.status.success(),
        "the consumer refused the stream: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8(output.stdout)?)
}
