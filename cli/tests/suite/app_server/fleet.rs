//! App-servers behind a real load balancer (HAProxy from Debian's packages, which `.ci/run`
//! installs): three `keel app-server --listen ws://…` processes, each with its own Keel home
//! and the fleet's token, behind HAProxy checking `/readyz` with a `Host` header. Clients reach
//! a server through the balancer with their bearer token (none: refused); a server killed is
//! marked down and its client reconnects through the balancer to another; a server told to
//! stop drains: the balancer sends it no one new while its connected client is still served.
//! (Threads every server can resume come with the PostgreSQL thread store.)

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use futures::{SinkExt, StreamExt};
use keel_test_support::{
    Haproxy, JsonLinesProcess, MockModelServer, ProcessBuilder, Script, Turn, assistant_message,
    write_config,
};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub(super) const WAIT: Duration = Duration::from_secs(30);
pub(super) const TOKEN: &str = "the-fleets-capability-token";

pub(super) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One server of the fleet: its own home, the fleet's token, a long drain.
async fn server(home: &Path, workspace: &Path) -> anyhow::Result<(JsonLinesProcess, String)> {
    server_with(home, workspace, &[], &[]).await
}

/// [`server`] with more arguments and environment.
pub(super) async fn server_with(
    home: &Path,
    workspace: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<(JsonLinesProcess, String)> {
    let token = home.join("ws-token");
    std::fs::write(&token, TOKEN)?;
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let mut process = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .arg("app-server")
        .args(["--listen", "ws://127.0.0.1:0", "--drain-seconds", "600"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token.as_os_str())
        .args(args.iter().copied())
        .home_path(home)
        .home_var("KEEL_HOME")
        .cwd(workspace)
        .env_remove("RUST_LOG");
    for (name, value) in env {
        process = process.env(name, value);
    }
    let mut process = process.spawn()?;
    let address = process.websocket_address().await?;
    Ok((process, address))
}

/// A client connected through the balancer with `token`, initialized.
pub(super) async fn client(balancer: &str, token: &str) -> anyhow::Result<Socket> {
    let mut request = format!("ws://{balancer}/").into_client_request()?;
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    call(
        &mut socket,
        1,
        "initialize",
        json!({"clientInfo": {"name": "fleet-client", "version": "1"}}),
    )
    .await?;
    socket
        .send(Message::Text(
            json!({"method": "initialized"}).to_string().into(),
        ))
        .await?;
    Ok(socket)
}

/// Sends request `id` and returns its answer.
pub(super) async fn call(
    socket: &mut Socket,
    id: u64,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let request = json!({"id": id, "method": method, "params": params});
    socket
        .send(Message::Text(request.to_string().into()))
        .await?;
    until(socket, |message| message["id"] == id).await
}

pub(super) async fn until(
    socket: &mut Socket,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    loop {
        let frame = tokio::time::timeout(WAIT, socket.next())
            .await
            .context("no message in time")?
            .context("the connection closed")??;
        if let Message::Text(text) = frame {
            let message: Value = serde_json::from_str(text.as_str())?;
            if done(&message) {
                return Ok(message);
            }
        }
    }
}

/// Waits for the server to end the connection (fails when it stays open).
pub(super) async fn until_closed(socket: &mut Socket) -> anyhow::Result<()> {
    loop {
        match tokio::time::timeout(WAIT, socket.next())
            .await
            .context("the connection stayed open")?
        {
            None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return Ok(()),
            Some(Ok(_)) => {}
        }
    }
}

/// Which server (0-based, by its home) a thread was started on.
fn server_of(started: &Value, homes: &[tempfile::TempDir]) -> anyhow::Result<usize> {
    let path = started["result"]["thread"]["path"]
        .as_str()
        .with_context(|| format!("no path: {started}"))?;
    homes
        .iter()
        .position(|home| path.starts_with(&*home.path().to_string_lossy()))
        .with_context(|| format!("{path} is in no server's home"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_haproxy),
    ignore = "needs HAProxy (Debian's `haproxy` package; .ci/run installs it)"
)]
async fn a_fleet_behind_haproxy_takes_clients_loses_a_server_and_drains_another()
-> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([Turn::new([assistant_message(
        "answered through the balancer",
    )])]))
    .await?;
    let workspace = tempfile::tempdir()?;
    let homes = [
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    ];
    let mut servers = Vec::new();
    let mut addresses = Vec::new();
    for home in &homes {
        write_config(
            home.path(),
            &mock.uri(),
            std::iter::empty::<(&str, toml::Value)>(),
        )?;
        let (process, address) = server(home.path(), workspace.path()).await?;
        servers.push(process);
        addresses.push(address);
    }
    let mut balancer = Haproxy::start(&addresses).await?;
    let through = balancer.address().to_string();

    // No token, no connection: the balancer passes the server's refusal on.
    let refused = tokio_tungstenite::connect_async(format!("ws://{through}/")).await;
    assert!(refused.is_err(), "a client without the token got in");

    // A client through the balancer runs a turn on whichever server it reached.
    let mut first = client(&through, TOKEN).await?;
    let started = call(
        &mut first,
        2,
        "thread/start",
        json!({"cwd": workspace.path()}),
    )
    .await?;
    let killed = server_of(&started, &homes)?;
    let thread_id = started["result"]["thread"]["id"].clone();
    call(
        &mut first,
        3,
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "hello"}]}),
    )
    .await?;
    let completed = until(&mut first, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");

    // Its server dies: the balancer marks it down, the connection ends, and the client
    // reconnects through the balancer to another server.
    servers[killed].kill().await?;
    balancer.wait_until_down(killed + 1).await?;
    until_closed(&mut first).await?;
    let mut again = client(&through, TOKEN).await?;
    let restarted = call(
        &mut again,
        2,
        "thread/start",
        json!({"cwd": workspace.path()}),
    )
    .await?;
    let drained = server_of(&restarted, &homes)?;
    assert_ne!(drained, killed, "{}", balancer.log());

    // That server is told to stop: it drains. The balancer sees `/readyz` fail and sends new
    // clients to the last one, while the draining server still answers its own client.
    servers[drained].signal(nix::sys::signal::Signal::SIGTERM)?;
    balancer.wait_until_down(drained + 1).await?;
    let mut newcomer = client(&through, TOKEN).await?;
    let placed = call(
        &mut newcomer,
        2,
        "thread/start",
        json!({"cwd": workspace.path()}),
    )
    .await?;
    let last = server_of(&placed, &homes)?;
    assert!(last != killed && last != drained, "{}", balancer.log());
    let listed = call(&mut again, 3, "thread/loaded/list", json!({})).await?;
    assert_eq!(
        listed["result"]["data"],
        json!([restarted["result"]["thread"]["id"]]),
        "the draining server still serves its client"
    );
    Ok(())
}
