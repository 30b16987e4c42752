use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use keel_test_support::{JsonLinesProcess, Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::common::*;

const WAIT: Duration = Duration::from_secs(20);

/// Starts `keel app-server --listen ws://127.0.0.1:0` and returns it with its address.
async fn listen(world: &World) -> anyhow::Result<(JsonLinesProcess, String)> {
    let process = world
        .builder()
        .args(["--listen", "ws://127.0.0.1:0"])
        .spawn()?;
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(line) = process
            .stderr()
            .lines()
            .find(|l| l.contains("listening on ws://"))
        {
            let addr = line
                .rsplit("ws://")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            return Ok((process, addr));
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no listening line: {}",
            process.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn send(socket: &mut Socket, value: Value) -> anyhow::Result<()> {
    socket.send(Message::Text(value.to_string().into())).await?;
    Ok(())
}

async fn read_until(
    socket: &mut Socket,
    mut done: impl FnMut(&Value) -> bool,
) -> anyhow::Result<Value> {
    loop {
        let frame = tokio::time::timeout(WAIT, socket.next()).await?;
        let Some(frame) = frame else {
            anyhow::bail!("socket closed")
        };
        if let Message::Text(text) = frame? {
            let value: Value = serde_json::from_str(text.as_str())?;
            if done(&value) {
                return Ok(value);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_serves_a_full_turn_health_checks_and_refuses_browsers() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["echo", "over-ws"])]),
        Turn::new([assistant_message("ws done")]),
    ]);
    let world = World::new(script, &[]).await?;
    let (_server, addr) = listen(&world).await?;

    for path in ["readyz", "healthz"] {
        let response = reqwest::get(format!("http://{addr}/{path}")).await?;
        assert_eq!(response.status().as_u16(), 200);
    }

    let mut browser = format!("ws://{addr}/").into_client_request()?;
    browser
        .headers_mut()
        .insert("origin", "http://evil.example".parse()?);
    let refused = tokio_tungstenite::connect_async(browser).await;
    assert!(refused.is_err(), "a request with Origin must be refused");

    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/")).await?;
    send(&mut socket, json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "ws", "version": "1"}}})).await?;
    read_until(&mut socket, |m| m["id"] == 1).await?;
    send(&mut socket, json!({"method": "initialized"})).await?;
    send(
        &mut socket,
        json!({"id": 2, "method": "thread/start", "params": {"cwd": world.ws()}}),
    )
    .await?;
    let start = read_until(&mut socket, |m| m["id"] == 2).await?;
    let thread_id = start["result"]["thread"]["id"].clone();
    send(&mut socket, json!({"id": 3, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": "go"}]}})).await?;
    let completed = read_until(&mut socket, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    let items = completed["params"]["turn"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        items.last().map(|i| i["text"].clone()),
        Some(json!("ws done"))
    );

    // Malformed JSON gets a parse error; the connection stays usable.
    socket.send(Message::Text("{oops".into())).await?;
    let error = read_until(&mut socket, |m| m["error"]["code"] == -32700).await?;
    assert!(error["id"].is_null());
    send(
        &mut socket,
        json!({"id": 4, "method": "thread/loaded/list", "params": {}}),
    )
    .await?;
    let loaded = read_until(&mut socket, |m| m["id"] == 4).await?;
    assert_eq!(loaded["result"]["data"].as_array().map(Vec::len), Some(1));
    Ok(())
}
