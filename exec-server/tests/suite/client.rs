//! The client's other ways in: the in-process handler and `spawn_local_exec_server`.

use anyhow::Context;
use keel_exec_server::{
    ExecServerClient, ExecServerClientOptions, ExecServerConfig, LocalExecServerOptions,
    spawn_local_exec_server,
};
use keel_protocol::exec_server::{SnapshotParams, WaitParams};
use pretty_assertions::assert_eq;

use super::harness::{BIN, collect, parse_pids, pipes, wait_pids_dead};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_client_runs_processes() -> anyhow::Result<()> {
    let client = ExecServerClient::in_process(
        ExecServerConfig::default(),
        ExecServerClientOptions::default(),
    )
    .await?;
    let mut events = client.subscribe();
    let session = client
        .exec(pipes(&["sh", "-c", "echo in-process; exit 4"]))
        .await?
        .session_id;
    let collected = collect(&mut events, &session).await?;
    assert_eq!(
        (collected.stdout_text().as_str(), collected.exit_code),
        ("in-process\n", Some(4))
    );
    let waited = client
        .wait(WaitParams {
            session_id: session.clone(),
            timeout_ms: Some(1),
        })
        .await?;
    assert_eq!(waited.exit_code, Some(4));
    let snapshot = client
        .snapshot(SnapshotParams {
            session_id: session,
        })
        .await?;
    assert_eq!(
        snapshot.stdout.map(|bytes| bytes.into_inner()),
        Some(b"in-process\n".to_vec())
    );

    let sleeper = client
        .exec(pipes(&["sh", "-c", "echo $$; exec sleep 1000"]))
        .await?
        .session_id;
    let text = super::harness::output_until(&mut events, &sleeper, "\n").await?;
    let pids = parse_pids(&text);
    client.shutdown().await;
    wait_pids_dead(&pids).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_local_exec_server_connects_and_cleans_up() -> anyhow::Result<()> {
    let server = spawn_local_exec_server(
        BIN,
        LocalExecServerOptions {
            args: vec!["--max-processes".into(), "4".into()],
            ..LocalExecServerOptions::default()
        },
    )
    .await?;
    let server_pid = i32::try_from(server.pid().context("running")?)?;
    let mut events = server.subscribe();
    let session = server
        .exec(pipes(&["sh", "-c", "echo $$; exec sleep 1000"]))
        .await?
        .session_id;
    let text = super::harness::output_until(&mut events, &session, "\n").await?;
    let mut pids = parse_pids(&text);
    pids.push(server_pid);
    drop(server);
    wait_pids_dead(&pids).await?;
    Ok(())
}
