//! `exec_server_url`: the model's commands run on a `keel exec-server` reached over a
//! websocket instead of in the engine's process; policy is still decided by the engine.

use keel_test_support::{ProcessBuilder, Turn, exec_command_call, shell_call};
use serde_json::json;

use super::run_with_config;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_on_the_configured_exec_server() -> anyhow::Result<()> {
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    let ws = tempfile::tempdir()?;
    let run = run_with_config(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": "echo remote-marker-one", "login": false}),
            )]),
            Turn::new([shell_call("c2", ["echo", "remote-marker-two"])]),
        ],
        &[],
        &[("exec_server_url", url.clone().into())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.output("c1").contains("remote-marker-one"),
        "{}",
        run.output("c1")
    );
    assert!(
        run.output("c2").contains("remote-marker-two"),
        "{}",
        run.output("c2")
    );
    // Both commands were started by the remote server.
    for marker in ["remote-marker-one", "remote-marker-two"] {
        server
            .wait_for_stderr_line(marker, |line| {
                line.contains("started") && line.contains(marker)
            })
            .await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_exec_server_is_reported_to_the_model() -> anyhow::Result<()> {
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let ws = tempfile::tempdir()?;
    let run = run_with_config(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo never"}),
        )])],
        &[],
        &[("exec_server_url", format!("ws://127.0.0.1:{port}").into())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let output = run.output("c1");
    assert!(
        output.contains("could not reach the exec-server"),
        "{output}"
    );
    Ok(())
}
