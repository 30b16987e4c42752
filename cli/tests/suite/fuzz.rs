//! Frame fuzzing of every server binary: ≥ 10⁵ hostile frames each (`KEEL_FUZZ_FRAMES` for
//! more, `KEEL_FUZZ_SEED` to replay), a 100 MB line and 100,000-deep nesting on stdio; after
//! every batch a valid request must be answered, stdout must stay pure JSON, and the server
//! must exit cleanly at end of input.

use std::path::Path;

use keel_test_support::fuzz::{
    FuzzPlan, FuzzReport, fuzz_frames_from_env, fuzz_seed_from_env, fuzz_stdio, fuzz_websocket,
};
use keel_test_support::write_config;
use serde_json::{Value, json};

const HUGE_LINE: usize = 100 * 1024 * 1024;
const DEEP: usize = 100_000;

fn plan(seeds: Vec<Value>, check: (&str, Value), handshake: Vec<Value>) -> FuzzPlan {
    FuzzPlan {
        frames: fuzz_frames_from_env(),
        batch: 2_000,
        seed: fuzz_seed_from_env(),
        seeds,
        check: (check.0.to_string(), check.1),
        handshake,
        // `KEEL_FUZZ_HUGE_LINE_MB=0` leaves the over-long line out (to tell its cost apart).
        huge_line_bytes: match std::env::var("KEEL_FUZZ_HUGE_LINE_MB")
            .ok()
            .and_then(|mb| mb.parse::<usize>().ok())
        {
            Some(0) => None,
            Some(mb) => Some(mb * 1024 * 1024),
            None => Some(HUGE_LINE),
        },
        deep_nesting: DEEP,
        closes_on_violation: false,
    }
}

fn report(server: &str, report: &FuzzReport) {
    eprintln!(
        "{server}: {} frames in {:.2?} ({:.0} frames/s), {} messages back, peak RSS {}",
        report.frames,
        report.elapsed,
        report.frames_per_second(),
        report.messages,
        report.peak_rss_kib.map_or("n/a".to_string(), |kib| format!(
            "{:.1} MiB",
            kib as f64 / 1024.0
        )),
    );
}

/// A Keel home whose model is unreachable (nothing the fuzzer sends reaches a model).
fn home() -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        "http://127.0.0.1:9",
        Vec::<(&str, toml::Value)>::new(),
    )?;
    Ok(home)
}

fn keel(home: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"));
    command
        .args(args)
        .current_dir(home)
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG");
    command
}

fn app_server_plan(dir: &Path) -> FuzzPlan {
    let dir = dir.display().to_string();
    let initialize = json!({"id": "init", "method": "initialize", "params": {"clientInfo": {"name": "fuzz", "version": "1"}}});
    plan(
        vec![
            initialize.clone(),
            json!({"method": "initialized"}),
            json!({"id": 1, "method": "thread/list", "params": {"limit": 5, "cursor": null}}),
            json!({"id": 2, "method": "thread/loaded/list", "params": {}}),
            json!({"id": 3, "method": "thread/read", "params": {"threadId": "019a0000-0000-7000-8000-000000000000", "includeTurns": true}}),
            json!({"id": 4, "method": "turn/interrupt", "params": {"threadId": "t", "turnId": "u"}}),
            json!({"id": 5, "method": "thread/unsubscribe", "params": {"threadId": "t"}}),
            json!({"id": 6, "method": "fs/readDirectory", "params": {"path": dir}}),
            json!({"id": 7, "method": "fs/getMetadata", "params": {"path": dir}}),
            json!({"id": 8, "method": "model/list", "params": {}}),
            json!({"id": 9, "method": "config/read", "params": {}}),
            json!({"id": 10, "method": "command/exec/terminate", "params": {"processId": "p"}}),
            json!({"id": 11, "result": {"decision": "accept"}}),
        ],
        ("thread/loaded/list", json!({})),
        vec![initialize, json!({"method": "initialized"})],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_over_stdio_survives_the_fuzzer() -> anyhow::Result<()> {
    let home = home()?;
    let result = fuzz_stdio(
        keel(home.path(), &["app-server"]),
        &app_server_plan(home.path()),
    )
    .await?;
    report("app-server stdio", &result);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_over_websocket_survives_the_fuzzer() -> anyhow::Result<()> {
    let home = home()?;
    let mut server = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .home_path(home.path())
        .home_var("KEEL_HOME")
        .env_remove("RUST_LOG")
        .spawn()?;
    let addr = server.websocket_address().await?;
    let mut plan = app_server_plan(home.path());
    plan.huge_line_bytes = None;
    let result = fuzz_websocket(&format!("ws://{addr}/"), &plan).await?;
    report("app-server websocket", &result);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_over_stdio_survives_the_fuzzer() -> anyhow::Result<()> {
    let home = home()?;
    let initialize = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}});
    let plan = plan(
        vec![
            initialize.clone(),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "no-such-tool", "arguments": {}}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "codex-reply", "arguments": {"threadId": "t", "prompt": "p"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}),
            json!({"jsonrpc": "2.0", "id": 5, "result": {"action": "accept"}}),
        ],
        ("ping", json!({})),
        vec![
            initialize,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ],
    );
    let result = fuzz_stdio(keel(home.path(), &["mcp-server"]), &plan).await?;
    report("mcp-server stdio", &result);
    Ok(())
}

/// The exec-server closes a connection on the first frame that is not JSON-RPC
/// (`exec-server.v0`), so its long-lived connection gets every frame it must tolerate, and the
/// others are thrown one per connection ([`exec_server_closes_each_violating_connection`]).
fn exec_server_plan() -> FuzzPlan {
    let initialize =
        json!({"id": "init", "method": "initialize", "params": {"clientName": "fuzz"}});
    let mut plan = plan(
        vec![
            initialize.clone(),
            json!({"method": "initialized", "params": {}}),
            json!({"id": 1, "method": "command/exec/snapshot", "params": {"sessionId": "s"}}),
            json!({"id": 2, "method": "command/exec/terminate", "params": {"sessionId": "s", "mode": "force"}}),
            json!({"id": 3, "method": "command/exec/write", "params": {"sessionId": "s", "chunk": "aGk="}}),
            json!({"id": 4, "method": "command/exec/wait", "params": {"sessionId": "s", "timeoutMs": 0}}),
            json!({"id": 5, "method": "command/exec/resize", "params": {"sessionId": "s", "rows": 10, "cols": 10}}),
            json!({"id": 6, "method": "command/exec/closeStdin", "params": {"sessionId": "s"}}),
        ],
        ("command/exec/snapshot", json!({"sessionId": "check"})),
        vec![initialize, json!({"method": "initialized", "params": {}})],
    );
    plan.closes_on_violation = true;
    plan
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_server_over_stdio_survives_the_fuzzer() -> anyhow::Result<()> {
    let home = home()?;
    let result = fuzz_stdio(keel(home.path(), &["exec-server"]), &exec_server_plan()).await?;
    report("exec-server stdio", &result);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_server_over_websocket_survives_the_fuzzer() -> anyhow::Result<()> {
    let home = home()?;
    let mut server = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .home_path(home.path())
        .home_var("KEEL_HOME")
        .env_remove("RUST_LOG")
        .spawn()?;
    let addr = server.websocket_address().await?;
    let mut plan = exec_server_plan();
    plan.huge_line_bytes = None;
    let result = fuzz_websocket(&format!("ws://{addr}/"), &plan).await?;
    report("exec-server websocket", &result);
    Ok(())
}

/// Frames the exec-server must not tolerate, one connection each: every one is answered or
/// closed, never crashes the server, and the server still serves a new connection after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_server_closes_each_violating_connection() -> anyhow::Result<()> {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    const VIOLATIONS: usize = 300;
    let home = home()?;
    let mut server = keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .home_path(home.path())
        .home_var("KEEL_HOME")
        .env_remove("RUST_LOG")
        .spawn()?;
    let url = format!("ws://{}/", server.websocket_address().await?);
    let plan = exec_server_plan();
    let mut fuzzer = keel_test_support::fuzz::FrameFuzzer::new(plan.seed, plan.seeds.clone());
    let violations = std::iter::repeat_with(|| fuzzer.next_frame())
        .filter(|frame| !keel_test_support::fuzz::is_tolerated(frame))
        .take(VIOLATIONS);
    for frame in violations {
        let (mut socket, _) = tokio_tungstenite::connect_async(&url).await?;
        let message = match String::from_utf8(frame) {
            Ok(text) => Message::Text(text.into()),
            Err(bytes) => Message::Binary(bytes.into_bytes().into()),
        };
        socket.send(message).await?;
        let closed = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            while let Some(Ok(message)) = socket.next().await {
                if message.is_close() {
                    break;
                }
            }
        })
        .await;
        anyhow::ensure!(closed.is_ok(), "a violating connection stayed open");
    }
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await?;
    let initialize = json!({"id": 1, "method": "initialize", "params": {"clientName": "after"}});
    socket
        .send(Message::Text(initialize.to_string().into()))
        .await?;
    let answer = tokio::time::timeout(std::time::Duration::from_secs(20), socket.next())
        .await?
        .ok_or_else(|| anyhow::anyhow!("closed"))??;
    let answer: Value = serde_json::from_str(answer.to_text()?)?;
    assert_eq!(
        answer["result"]["protocolVersion"], "exec-server.v0",
        "{answer}"
    );
    Ok(())
}
