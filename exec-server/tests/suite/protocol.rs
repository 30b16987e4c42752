//! Wire-level rules, spoken as raw JSON: handshake order, error codes, malformed input,
//! browser refusal and `--listen` validation.

use anyhow::Context;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::harness::{BIN, RawPeer, Server, Transport, both_transports};

fn exec_params() -> Value {
    json!({"argv": ["true"], "cwd": "/", "env": {}, "tty": false, "arg0": null})
}

fn error_of(response: &Value) -> (i64, String) {
    (
        response["error"]["code"].as_i64().unwrap_or_default(),
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

async fn handshake_order_is_enforced(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;

    let (code, message) = error_of(&peer.request(1, "command/exec", exec_params()).await?);
    assert_eq!(code, -32600);
    assert!(message.contains("send `initialize`"), "{message}");

    let response = peer
        .request(2, "initialize", json!({"clientName": "t"}))
        .await?;
    assert_eq!(
        response["result"],
        json!({"protocolVersion": "exec-server.v0"})
    );

    let (code, message) = error_of(&peer.request(3, "command/exec", exec_params()).await?);
    assert_eq!(code, -32600);
    assert!(message.contains("`initialized`"), "{message}");

    let (code, message) = error_of(
        &peer
            .request(4, "initialize", json!({"clientName": "t"}))
            .await?,
    );
    assert_eq!(
        (code, message.contains("already")),
        (-32600, true),
        "{message}"
    );

    peer.send(json!({"method": "initialized", "params": {}}))
        .await?;
    let response = peer.request(5, "command/exec", exec_params()).await?;
    assert_eq!(response["result"]["sessionId"], "session-1");

    let (code, message) = error_of(
        &peer
            .request(6, "command/exec", json!({"argv": [], "cwd": "/"}))
            .await?,
    );
    assert_eq!(
        (code, message.contains("argv")),
        (-32602, true),
        "{message}"
    );
    let (code, message) = error_of(
        &peer
            .request(7, "command/exec", json!({"argv": ["true"], "cwd": "tmp"}))
            .await?,
    );
    assert_eq!(
        (code, message.contains("absolute")),
        (-32602, true),
        "{message}"
    );
    let (code, message) = error_of(&peer.request(8, "command/exec", json!({"cwd": "/"})).await?);
    assert_eq!(
        (code, message.contains("argv")),
        (-32602, true),
        "{message}"
    );
    let (code, message) = error_of(&peer.request(9, "command/nope", json!({})).await?);
    assert_eq!(
        (code, message),
        (-32600, "unknown method `command/nope`".to_string())
    );
    let (code, message) = error_of(
        &peer
            .request(
                10,
                "command/exec",
                json!({"argv": ["/does/not/exist"], "cwd": "/"}),
            )
            .await?,
    );
    assert_eq!(code, -32603);
    assert!(message.contains("No such file"), "{message}");
    Ok(())
}

async fn malformed_json_closes_the_connection(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;
    peer.initialize().await?;
    // A websocket server must keep serving its other connections.
    let mut other = match transport {
        Transport::WebSocket => {
            let mut other = server.raw().await?;
            other.initialize().await?;
            Some(other)
        }
        Transport::Stdio => None,
    };
    peer.send_text("{not json").await?;
    let error = peer.recv().await?.context("a parse error before closing")?;
    assert_eq!(error["id"], Value::Null);
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(peer.recv().await?, None, "connection must close");
    match other.as_mut() {
        Some(other) => {
            let response = other.request(1, "command/exec", exec_params()).await?;
            assert_eq!(response["result"]["sessionId"], "session-1");
        }
        None => assert!(server.exited().await?.success()),
    }
    Ok(())
}

async fn unexpected_notification_closes_the_connection(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;
    peer.initialize().await?;
    peer.send(json!({"method": "command/exec/bogus", "params": {}}))
        .await?;
    assert_eq!(peer.recv().await?, None);
    Ok(())
}

async fn jsonrpc_member_is_accepted_and_omitted(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;
    peer.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientName": "t"}}),
    )
    .await?;
    let response = peer.recv().await?.context("a response")?;
    assert_eq!(
        response,
        json!({"id": 1, "result": {"protocolVersion": "exec-server.v0"}})
    );
    Ok(())
}

both_transports!(
    handshake_order_is_enforced,
    malformed_json_closes_the_connection,
    unexpected_notification_closes_the_connection,
    jsonrpc_member_is_accepted_and_omitted,
);

#[tokio::test]
async fn websocket_with_origin_is_refused() -> anyhow::Result<()> {
    let server = Server::start(Transport::WebSocket, &[]).await?;
    let url = server.url.clone().context("ws url")?;
    let refused = RawPeer::websocket(&url, &[("Origin", "https://evil.example")]).await;
    let message = format!("{:#}", refused.err().context("connection must be refused")?);
    assert!(message.contains("403"), "{message}");
    // Without the header the same server accepts.
    let mut peer = RawPeer::websocket(&url, &[]).await?;
    peer.initialize().await?;
    Ok(())
}

#[tokio::test]
async fn bad_listen_url_is_explained() -> anyhow::Result<()> {
    for url in ["http://127.0.0.1:1", "ws://localhost:0", "ws://127.0.0.1"] {
        let output = tokio::process::Command::new(BIN)
            .args(["--listen", url])
            .output()
            .await?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(url), "{stderr}");
        assert!(
            stderr.contains("expected `stdio://` or `ws://IP:PORT`"),
            "{stderr}"
        );
    }
    Ok(())
}
