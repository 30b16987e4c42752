//! Wire-level rules, spoken as raw JSON, as `exec-server.v0` documents them
//! (`docs/exec-server.md`): handshake order, the error table (-32600 for an unknown method),
//! input that is not JSON-RPC closing its connection (and only that one), the extensions
//! `initialize` announces, browser refusal and `--listen` validation.

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
        json!({
            "protocolVersion": "exec-server.v0",
            "extensions": [
                "command/exec/resize",
                "command/exec/closeStdin",
                "command/exec/wait",
                "command/exec/snapshot",
                "command/exec/terminate.mode",
                "patch.v1",
                "fs.v1"
            ]
        })
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
    // A huge method name is not echoed back whole.
    let huge = "m".repeat(4 * 1024 * 1024);
    let (code, message) = error_of(&peer.request(19, &huge, json!({})).await?);
    assert_eq!(code, -32600);
    assert!(
        message.len() < 300 && message.contains("(4194304 bytes)"),
        "{} bytes: {}",
        message.len(),
        &message[..message.len().min(200)]
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

/// Each line that is not a JSON-RPC message is answered with its error, then the
/// connection closes (on stdio the server then exits, its work done).
async fn malformed_input_is_answered_and_closes_the_connection(
    transport: Transport,
) -> anyhow::Result<()> {
    for (text, code) in [
        ("{not json", -32700),
        ("[]", -32600),
        ("5", -32600),
        (r#"{"id": null, "method": "command/exec"}"#, -32600),
    ] {
        let mut server = Server::start(transport, &[]).await?;
        let mut peer = server.raw().await?;
        peer.initialize().await?;
        peer.send_text(text).await?;
        let error = peer.recv().await?.context("an error answer")?;
        assert_eq!(error["id"], Value::Null, "{text}: {error}");
        assert_eq!(error["error"]["code"], code, "{text}: {error}");
        assert_eq!(
            peer.recv().await?,
            None,
            "{text}: the connection must close"
        );
        if transport == Transport::Stdio {
            assert!(server.exited().await?.success());
        }
    }
    Ok(())
}

/// `initialized` is the only client notification: any other one closes the connection.
async fn unknown_notification_closes_the_connection(transport: Transport) -> anyhow::Result<()> {
    let mut server = Server::start(transport, &[]).await?;
    let mut peer = server.raw().await?;
    peer.initialize().await?;
    peer.send(json!({"method": "command/exec/bogus", "params": {}}))
        .await?;
    assert_eq!(peer.recv().await?, None, "the connection must close");
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
    assert_eq!(response["id"], 1, "{response}");
    assert_eq!(response["result"]["protocolVersion"], "exec-server.v0");
    assert!(response.get("jsonrpc").is_none(), "{response}");
    Ok(())
}

both_transports!(
    handshake_order_is_enforced,
    malformed_input_is_answered_and_closes_the_connection,
    unknown_notification_closes_the_connection,
    jsonrpc_member_is_accepted_and_omitted,
);

/// A protocol violation ends only the connection that made it: another client's process and
/// connection carry on, and the server accepts new connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_violation_closes_only_its_own_connection() -> anyhow::Result<()> {
    let server = Server::start(Transport::WebSocket, &[]).await?;
    let url = server.url.clone().context("ws url")?;
    let mut bystander = RawPeer::websocket(&url, &[]).await?;
    bystander.initialize().await?;
    let started = bystander
        .request(
            1,
            "command/exec",
            json!({"argv": ["sleep", "30"], "cwd": "/", "env": {"PATH": "/usr/bin:/bin"}, "tty": false, "arg0": null}),
        )
        .await?;
    let session = started["result"]["sessionId"].clone();
    for text in ["{not json", "[]", r#"{"method": "nope"}"#] {
        let mut offender = RawPeer::websocket(&url, &[]).await?;
        offender.initialize().await?;
        offender.send_text(text).await?;
        while offender.recv().await?.is_some() {}
    }
    let snapshot = bystander
        .request(2, "command/exec/snapshot", json!({"sessionId": session}))
        .await?;
    assert_eq!(snapshot["result"]["running"], true, "{snapshot}");
    let mut newcomer = RawPeer::websocket(&url, &[]).await?;
    newcomer.initialize().await?;
    Ok(())
}

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

/// Waits sent just before the client closes stdin are all answered before the server exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_read_before_end_of_input_are_answered() -> anyhow::Result<()> {
    const SESSIONS: i64 = 20;
    let mut server = Server::start(Transport::Stdio, &[]).await?;
    let mut peer = server.raw().await?;
    peer.initialize().await?;
    let mut sessions = Vec::new();
    for id in 1..=SESSIONS {
        let response = peer.request(id, "command/exec", exec_params()).await?;
        sessions.push(response["result"]["sessionId"].clone());
    }
    let mut batch = String::new();
    for (offset, session) in sessions.iter().enumerate() {
        let request = json!({"id": 100 + offset, "method": "command/exec/wait", "params": {"sessionId": session}});
        batch.push_str(&request.to_string());
        batch.push('\n');
    }
    peer.send_text(batch.trim_end()).await?;
    let RawPeer::Stdio { stdin, .. } = &mut peer else {
        anyhow::bail!("not stdio");
    };
    drop(stdin.take());
    let mut answered = std::collections::BTreeSet::new();
    while let Some(message) = peer.recv().await? {
        if let Some(id) = message["id"].as_i64()
            && id >= 100
        {
            assert!(message.get("result").is_some(), "{message}");
            answered.insert(id);
        }
    }
    assert_eq!(answered.len(), sessions.len());
    assert!(server.exited().await?.success());
    Ok(())
}
