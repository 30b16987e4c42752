//! Nothing outlives its connection or its server: closing a connection or signalling the
//! server kills every process it started, grandchildren included.

use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;

use super::harness::{
    Server, Transport, both_transports, output_until, parse_pids, pipes, tty, wait_pids_dead,
};

/// Starts `sleep 1000` with a `sleep 1000` child on pipes and on a PTY, and returns the
/// pids of all four processes once both have printed them.
async fn start_sleepers(client: &keel_exec_server::ExecServerClient) -> anyhow::Result<Vec<i32>> {
    let mut events = client.subscribe();
    let script = "sleep 1000 & echo child=$!; echo self=$$; echo ready; wait";
    let mut pids = Vec::new();
    for params in [pipes(&["sh", "-c", script]), tty(&["sh", "-c", script])] {
        let session = client.exec(params).await?.session_id;
        let text = output_until(&mut events, &session, "ready").await?;
        let found = parse_pids(&text.replace(['=', '\r'], " "));
        assert_eq!(found.len(), 2, "{text:?}");
        pids.extend(found);
    }
    for pid in &pids {
        kill(Pid::from_raw(*pid), None)?;
    }
    Ok(pids)
}

async fn closing_the_connection_kills_processes(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &["--shutdown-grace-ms", "500"]).await?;
    let client = server.client().await?;
    let pids = start_sleepers(&client).await?;
    drop(client);
    wait_pids_dead(&pids).await?;
    match transport {
        // The stdio server's only connection is gone, so it exits cleanly.
        Transport::Stdio => assert!(server.exited().await?.success()),
        // A websocket server keeps serving new connections.
        Transport::WebSocket => {
            let client = server.client().await?;
            client.exec(pipes(&["true"])).await?;
        }
    }
    Ok(())
}

async fn sigterm_to_the_server_kills_processes(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &["--shutdown-grace-ms", "500"]).await?;
    let client = server.client().await?;
    let pids = start_sleepers(&client).await?;
    let server_pid = server.child.id().context("server pid")?;
    kill(Pid::from_raw(i32::try_from(server_pid)?), Signal::SIGTERM)?;
    let status = server.exited().await?;
    assert!(status.success(), "{status:?}");
    wait_pids_dead(&pids).await?;
    Ok(())
}

/// `kill -9` runs no shutdown code; the server's watchdog still kills every group it owned.
async fn kill_9_of_the_server_kills_processes(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let client = server.client().await?;
    let pids = start_sleepers(&client).await?;
    let server_pid = server.child.id().context("server pid")?;
    kill(Pid::from_raw(i32::try_from(server_pid)?), Signal::SIGKILL)?;
    server.exited().await?;
    wait_pids_dead(&pids).await?;
    Ok(())
}

both_transports!(
    closing_the_connection_kills_processes,
    sigterm_to_the_server_kills_processes,
    kill_9_of_the_server_kills_processes,
);
