use keel_test_support::{AppServerProcess, Script};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_rules() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = AppServerProcess::spawn(world.builder())?;
    let early = server.send_request("thread/list", json!({})).await?;
    let response = server.read_response(early).await?;
    assert_eq!(response["error"]["message"], "Not initialized");
    assert_eq!(response["error"]["code"], -32600);
    assert!(
        response.get("jsonrpc").is_none(),
        "the app-server omits `jsonrpc`: {response}"
    );

    let init = server.initialize().await?;
    // The Codex protocol version leads (the TUI compares it with its own, so no false
    // "older than your CLI" notice); Keel's own version stays visible.
    let agent = init["userAgent"].as_str().unwrap_or_default();
    assert!(agent.starts_with("keel/0.171.0 ("), "{init}");
    assert!(
        agent.contains(&format!("keel {}", env!("CARGO_PKG_VERSION"))),
        "{init}"
    );
    assert_eq!(init["platformFamily"], "unix");
    assert_eq!(init["platformOs"], "linux");
    let again = server
        .send_request(
            "initialize",
            json!({"clientInfo": {"name": "x", "version": "1"}}),
        )
        .await?;
    let response = server.read_response(again).await?;
    assert_eq!(response["error"]["message"], "Already initialized");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_errors_and_the_connection_survives() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    server.send_raw_line("{not json").await?;
    let error = server
        .read_until("parse error", |m| m["error"]["code"] == -32700)
        .await?;
    assert!(error["id"].is_null());
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("message is not JSON")
    );

    let unknown = server.send_request("thread/teleport", json!({})).await?;
    let response = server.read_response(unknown).await?;
    assert_eq!(response["error"]["code"], -32601);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("thread/teleport")
    );

    let bad = server
        .send_request("turn/start", json!({"threadId": 5}))
        .await?;
    let response = server.read_response(bad).await?;
    assert_eq!(response["error"]["code"], -32602);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("turn/start"),
        "{response}"
    );

    let missing = server
        .send_request(
            "thread/read",
            json!({"threadId": "0193c2a4-5b1e-7cc0-8a51-1f0e6d3b9a77"}),
        )
        .await?;
    let response = server.read_response(missing).await?;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no thread with id"),
        "{response}"
    );

    let malformed_id = server
        .send_request("thread/read", json!({"threadId": "nope"}))
        .await?;
    let response = server.read_response(malformed_id).await?;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid thread id"),
        "{response}"
    );

    // A Codex feature Keel lacks is named as such, not just "unknown".
    let realtime = server
        .send_request("thread/realtime/start", json!({"threadId": "x"}))
        .await?;
    let response = server.read_response(realtime).await?;
    assert_eq!(response["error"]["code"], -32601);
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not supported") && message.contains("realtime"),
        "{response}"
    );
    // What the TUI asks at start-up has an honest answer: nothing to import here, and no
    // stored sign-in to forget.
    let detected = server
        .request(
            "externalAgentConfig/detect",
            json!({"includeHome": true, "cwds": null}),
        )
        .await?;
    assert_eq!(detected, json!({"items": [], "connectors": []}));
    let logout = server.request("account/logout", Value::Null).await?;
    assert_eq!(logout, json!({}));
    let still_alive = server.request("thread/list", json!({})).await?;
    assert!(still_alive["data"].is_array());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_requests_gets_overload_errors_not_unbounded_queues() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let builder = world.builder().args([
        "--request-queue-capacity",
        "2",
        "--max-in-flight-requests",
        "1",
    ]);
    let mut server = world.server_with(builder).await?;
    // Each request holds the single in-flight slot for a while.
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(
            server
                .send_request("command/exec", json!({"command": ["sleep", "0.2"]}))
                .await?,
        );
    }
    let mut overloaded = 0;
    let mut ok = 0;
    for id in ids {
        let response = server.read_response(id).await?;
        if response["error"]["code"] == -32001 {
            assert_eq!(
                response["error"]["message"],
                "Server overloaded; retry later."
            );
            overloaded += 1;
        } else {
            assert_eq!(response["result"]["exitCode"], 0, "{response}");
            ok += 1;
        }
    }
    assert!(overloaded > 0, "no request was rejected");
    assert!(ok > 0, "no request was served");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_json_schema_writes_the_protocol() -> anyhow::Result<()> {
    let out = tempfile::tempdir()?;
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(out.path())
        .status()
        .await?;
    assert!(status.success());
    let requests = std::fs::read_to_string(out.path().join("ClientRequest.json"))?;
    for method in ["thread/start", "turn/start", "command/exec", "fs/readFile"] {
        assert!(
            requests.contains(&format!("\"{method}\"")),
            "{method} missing"
        );
    }
    let bundle: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        out.path().join("keel_app_server_protocol.schemas.json"),
    )?)?;
    assert!(bundle["definitions"]["ThreadStartParams"].is_object());
    Ok(())
}

/// Every kind of input that is not a JSON-RPC message gets its error code and a reason in
/// words, and the connection goes on; an over-long line is skipped, not buffered whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_lines_get_the_shared_error_codes_and_the_connection_survives() -> anyhow::Result<()>
{
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world
        .server_with(world.builder().args(["--max-line-bytes", "4096"]))
        .await?;
    let cases: Vec<(Vec<u8>, i64, &str)> = vec![
        (b"{\"id\": 1, \xff}".to_vec(), -32700, "not valid UTF-8"),
        (vec![b'x'; 100_000], -32700, "longer than 4096 bytes"),
        (b"[]".to_vec(), -32600, "expected an object, got an array"),
        (b"null".to_vec(), -32600, "expected an object, got null"),
        (b"5".to_vec(), -32600, "expected an object, got a number"),
        (
            br#"{"id": null, "method": "thread/list"}"#.to_vec(),
            -32600,
            "`id` is null",
        ),
        (
            br#"{"id": [1], "method": "thread/list"}"#.to_vec(),
            -32600,
            "`id` must be a string or an integer",
        ),
    ];
    for (line, code, reason) in cases {
        server.send_raw_line(&line).await?;
        let error = server
            .read_until("an error answer", |m| m.get("error").is_some())
            .await?;
        assert_eq!(error["error"]["code"], code, "{error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{message}");
        assert!(
            !message.contains("enum") && !message.contains("struct"),
            "{message}"
        );
        let alive = server.request("thread/list", json!({})).await?;
        assert!(alive["data"].is_array());
    }
    Ok(())
}

/// Requests read before stdin closed are all answered before the server exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_read_before_end_of_input_are_answered() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    for _ in 0..5 {
        let mut server = AppServerProcess::spawn(world.builder())?;
        let batch = [
            json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}}),
            json!({"method": "initialized"}),
            json!({"id": 2, "method": "thread/list", "params": {}}),
            json!({"id": 3, "method": "model/list", "params": {}}),
        ];
        let mut bytes = Vec::new();
        for message in &batch {
            bytes.extend(serde_json::to_vec(message)?);
            bytes.push(b'\n');
        }
        bytes.pop();
        server.send_raw_line(&bytes).await?;
        server.close_stdin();
        for id in [1, 2, 3] {
            let response = server.read_response(id).await?;
            assert!(response.get("result").is_some(), "{response}");
        }
        assert!(server.wait().await?.success());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_warnings_reach_the_client_after_the_handshake() -> anyhow::Result<()> {
    let world = World::new(
        keel_test_support::Script::new(Vec::<keel_test_support::Turn>::new()),
        &[("modle", "gpt-typo".into())],
    )
    .await?;
    let mut server = world.server().await?;
    let warning = server.read_notification("configWarning").await?;
    let params = &warning["params"];
    assert!(
        params["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("modle"),
        "{warning}"
    );
    assert_eq!(params["details"], "did you mean `model`?", "{warning}");
    assert!(
        params["path"]
            .as_str()
            .unwrap_or_default()
            .ends_with("config.toml"),
        "{warning}"
    );
    Ok(())
}
