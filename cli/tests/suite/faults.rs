//! Model faults through the real binaries: each ends in a completed turn (after a retry) or a
//! clear error within the configured retries, and leaves no process of the run behind.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    AppServerProcess, Fault, MarkedSleeper, MockModelServer, ProcessBuilder, Script, Turn,
    assistant_message, shell_call, write_config,
};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

/// A fault, and the error it ends in when no retry can help (`None`: one retry recovers).
fn faults() -> Vec<(&'static str, Fault, Option<&'static str>)> {
    vec![
        ("429", Fault::rate_limited(0), None),
        ("500", Fault::http(500), None),
        ("disconnect", Fault::disconnect_after(2), None),
        (
            "stall",
            Fault::stall_after(1, Duration::from_secs(30)),
            None,
        ),
        ("malformed SSE", Fault::malformed_after(2), None),
        (
            "response.failed",
            Fault::response_failed("server_error", "the model broke down"),
            None,
        ),
        ("401", Fault::http(401), Some("401")),
        (
            "response.failed for good",
            Fault::response_failed("invalid_prompt", "the prompt was rejected"),
            Some("the prompt was rejected"),
        ),
    ]
}

struct Run {
    mock: MockModelServer,
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    sleeper: MarkedSleeper,
}

/// The model starts a background process, then the next request meets `fault`, then (if
/// retried) the turn finishes.
async fn run_with(name: &str, fault: Fault) -> anyhow::Result<Run> {
    let ws = tempfile::tempdir()?;
    let marker = name.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
    let sleeper = MarkedSleeper::new(ws.path(), &marker)?;
    let command = sleeper.background_command(60);
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-c", command.as_str()])]),
        Turn::new([assistant_message("a partial answer that breaks")]).with_fault(fault),
        Turn::new([assistant_message("finished after the fault")]),
    ]);
    let mock = MockModelServer::start(script).await?;
    let home = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("approval_policy", toml::Value::from("never")),
            ("sandbox_mode", toml::Value::from("danger-full-access")),
            ("model_providers.mock.request_max_retries", 1.into()),
            ("model_providers.mock.stream_max_retries", 1.into()),
            ("model_providers.mock.stream_idle_timeout_ms", 500.into()),
        ],
    )?;
    Ok(Run {
        mock,
        home,
        ws,
        sleeper,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_exec_recovers_from_or_reports_each_model_fault() -> anyhow::Result<()> {
    for (name, fault, fatal) in faults() {
        let run = run_with(name, fault).await?;
        let output = tokio::time::timeout(
            WAIT,
            tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
                .args(["exec", "go"])
                .current_dir(run.ws.path())
                .env("KEEL_HOME", run.home.path())
                .env_remove("RUST_LOG")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .with_context(|| format!("{name}: keel exec did not finish"))??;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if let Some(expected) = fatal {
            assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
            assert!(stderr.contains(expected), "{name}: {stderr}");
            assert_eq!(run.mock.requests().len(), 2, "{name}: not retried");
        } else {
            assert_eq!(output.status.code(), Some(0), "{name}: {stderr}");
            assert_eq!(stdout, "finished after the fault\n", "{name}: {stderr}");
            assert!(stderr.contains("retrying 1/1"), "{name}: {stderr}");
            assert_eq!(run.mock.requests().len(), 3, "{name}");
        }
        run.sleeper
            .wait_until_gone(Duration::from_secs(10))
            .await
            .with_context(|| format!("{name}: processes left"))?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_recovers_from_or_reports_each_model_fault() -> anyhow::Result<()> {
    for (name, fault, fatal) in faults() {
        let run = run_with(name, fault).await?;
        let mut server = AppServerProcess::spawn(
            ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
                .arg("app-server")
                .home_path(run.home.path())
                .home_var("KEEL_HOME")
                .cwd(run.ws.path())
                .env_remove("RUST_LOG"),
        )?;
        server.initialize().await?;
        let thread_id = server.start_thread(json!({"cwd": run.ws.path()})).await?;
        let turn_id = server.start_turn(&thread_id, "go").await?;
        let completed = server.read_turn_completed(&turn_id).await?;
        let status = completed["turn"]["status"].as_str().unwrap_or_default();
        let messages: Vec<&serde_json::Value> = completed["turn"]["items"]
            .as_array()
            .context("items")?
            .iter()
            .filter(|item| item["type"] == "agentMessage")
            .map(|item| &item["text"])
            .collect();
        if let Some(expected) = fatal {
            assert_eq!(status, "failed", "{name}: {completed}");
            let message = completed["turn"]["error"]["message"]
                .as_str()
                .unwrap_or_default();
            assert!(message.contains(expected), "{name}: {completed}");
            assert_eq!(run.mock.requests().len(), 2, "{name}: not retried");
            // A message the model never finished is not part of the record.
            assert!(messages.is_empty(), "{name}: {messages:?}");
        } else {
            assert_eq!(status, "completed", "{name}: {completed}");
            assert_eq!(run.mock.requests().len(), 3, "{name}");
            // The broken attempt's message never completed: only the retry's is recorded.
            assert_eq!(messages, vec!["finished after the fault"], "{name}");
        }
        server.close_stdin();
        server.wait().await?;
        run.sleeper
            .wait_until_gone(Duration::from_secs(10))
            .await
            .with_context(|| format!("{name}: processes left"))?;
    }
    Ok(())
}
