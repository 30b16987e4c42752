//! Commands never outlive the binary that started them, however it ends: SIGTERM, SIGINT,
//! end of input, or `kill -9`. Each test runs a command that leaves a shell, a background
//! shell and sleepers, two of them escaped from its process group (`setsid`, a double fork),
//! ends the owner, and then looks for them in the process table. And a command that returns
//! at once takes what it left with it before the model hears back.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    AppServerProcess, MarkedSleeper, McpProcess, MockModelServer, ProcessBuilder, Script, Turn,
    assistant_message, shell_call, write_config,
};
use nix::sys::signal::Signal;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

/// How long the processes may take to disappear once their owner is gone.
const GONE_WITHIN: Duration = Duration::from_secs(15);
const WAIT: Duration = Duration::from_secs(60);

struct Setup {
    _mock: MockModelServer,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    sleeper: MarkedSleeper,
}

/// A mock whose model runs the nested command, then answers.
async fn setup(marker: &str) -> anyhow::Result<Setup> {
    let ws = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(ws.path(), marker)?;
    let script = Script::new([
        Turn::new([shell_call(
            "c1",
            ["bash", "-c", sleeper.nested_command(60).as_str()],
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("approval_policy", "never"),
            ("sandbox_mode", "danger-full-access"),
        ],
    )?;
    Ok(Setup {
        _mock: mock,
        home,
        ws,
        sleeper,
    })
}

/// Starts `keel exec --json` and returns once its command has started.
async fn keel_exec_running_the_command(setup: &Setup) -> anyhow::Result<tokio::process::Child> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec", "--app-server-events", "start a server"])
        .current_dir(setup.ws.path())
        .env("KEEL_HOME", setup.home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await? {
            if line.contains("\"item/started\"") && line.contains("commandExecution") {
                return anyhow::Ok(());
            }
        }
        anyhow::bail!("keel exec ended before the command started")
    })
    .await??;
    wait_for_sleepers(&setup.sleeper).await?;
    // Keep reading so the binary never blocks on a full pipe while it shuts down.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(child)
}

/// The command announces itself before its processes exist; wait until both sleepers run.
async fn wait_for_sleepers(sleeper: &MarkedSleeper) -> anyhow::Result<()> {
    tokio::time::timeout(WAIT, async {
        while sleeper.live_processes().len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .context("the command's processes never appeared")
}

fn send(child: &tokio::process::Child, signal: Signal) -> anyhow::Result<()> {
    let pid = child.id().context("already exited")?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid)?), signal)?;
    Ok(())
}

async fn keel_exec_ended_by(signal: Signal, marker: &str) -> anyhow::Result<()> {
    let setup = setup(marker).await?;
    let mut child = keel_exec_running_the_command(&setup).await?;
    send(&child, signal)?;
    tokio::time::timeout(WAIT, child.wait())
        .await
        .context("keel exec did not exit")??;
    setup.sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_keel_exec_ends_its_command() -> anyhow::Result<()> {
    keel_exec_ended_by(Signal::SIGTERM, "exec-term").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_keel_exec_ends_its_command() -> anyhow::Result<()> {
    keel_exec_ended_by(Signal::SIGINT, "exec-int").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_keel_exec_ends_its_command() -> anyhow::Result<()> {
    keel_exec_ended_by(Signal::SIGKILL, "exec-kill").await
}

async fn app_server_running_the_command(setup: &Setup) -> anyhow::Result<AppServerProcess> {
    let mut server = AppServerProcess::spawn(
        ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("app-server")
            .home_path(setup.home.path())
            .home_var("KEEL_HOME")
            .cwd(setup.ws.path())
            .env_remove("RUST_LOG"),
    )?;
    server.initialize().await?;
    let thread_id = server.start_thread(json!({"cwd": setup.ws.path()})).await?;
    server.start_turn(&thread_id, "start a server").await?;
    server
        .read_until("command started", |m| {
            m["method"] == "item/started" && m["params"]["item"]["type"] == "commandExecution"
        })
        .await?;
    wait_for_sleepers(&setup.sleeper).await?;
    Ok(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_to_the_app_server_ends_its_command() -> anyhow::Result<()> {
    let setup = setup("app-eof").await?;
    let mut server = app_server_running_the_command(&setup).await?;
    server.close_stdin();
    server.wait().await?;
    setup.sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_app_server_ends_its_command() -> anyhow::Result<()> {
    let setup = setup("app-term").await?;
    let mut server = app_server_running_the_command(&setup).await?;
    server.signal(Signal::SIGTERM)?;
    server.wait().await?;
    setup.sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_the_mcp_server_ends_its_command() -> anyhow::Result<()> {
    mcp_server_ended(Some(Signal::SIGTERM), "mcp-term").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_to_the_mcp_server_ends_its_command() -> anyhow::Result<()> {
    mcp_server_ended(None, "mcp-eof").await
}

/// Runs the command through `keel mcp-server`, then sends it `signal` (or closes its input).
async fn mcp_server_ended(signal: Option<Signal>, marker: &str) -> anyhow::Result<()> {
    let setup = setup(marker).await?;
    let mut mcp = McpProcess::spawn(
        ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("mcp-server")
            .home_path(setup.home.path())
            .home_var("KEEL_HOME")
            .cwd(setup.ws.path())
            .env_remove("RUST_LOG")
            // After end of input, running tool calls get 30 s to answer (the MCP stdio
            // shutdown sequence) before they are stopped.
            .timeout(Duration::from_secs(90)),
    )?;
    mcp.initialize().await?;
    mcp.send_tool_call(
        "codex",
        json!({"prompt": "start a server", "cwd": setup.ws.path()}),
    )
    .await?;
    mcp.read_codex_event("exec_command_begin").await?;
    wait_for_sleepers(&setup.sleeper).await?;
    match signal {
        Some(signal) => mcp.signal(signal)?,
        None => mcp.close_stdin(),
    }
    mcp.wait().await?;
    setup.sleeper.wait_until_gone(GONE_WITHIN).await?;
    Ok(())
}

/// A one-shot command that starts servers in the background (two of them escaping its
/// process group) and returns at once: they are gone before the model is asked again, and
/// the model still gets the command's output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_leftovers_are_gone_before_the_model_hears_back() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let sleeper = std::sync::Arc::new(MarkedSleeper::new(ws.path(), "one-shot")?);
    let command = sleeper.background_command(60);
    let seen = sleeper.clone();
    let left_when_asked = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = left_when_asked.clone();
    let mock = MockModelServer::builder()
        .responder(move |request| {
            if request.tool_output("c1").is_none() {
                return Some(Turn::new([shell_call(
                    "c1",
                    ["bash", "-c", command.as_str()],
                )]));
            }
            if let Ok(mut left) = record.lock() {
                left.get_or_insert_with(|| seen.live_processes());
            }
            Some(Turn::new([assistant_message("done")]))
        })
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("approval_policy", "never"),
            ("sandbox_mode", "danger-full-access"),
        ],
    )?;
    let out = super::exec::keel_exec(home.path(), ws.path(), &["start servers"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let output = mock
        .requests()
        .iter()
        .find_map(|request| request.tool_output("c1"))
        .map(|output| output.to_string())
        .unwrap_or_default();
    assert!(output.contains("started"), "{output}");
    let left = left_when_asked
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    assert_eq!(
        left,
        Some(Vec::new()),
        "processes alive when the model was asked again"
    );
    Ok(())
}
