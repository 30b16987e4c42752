//! The JSON-lines process harness, against a small real server written in Python.

use std::time::Duration;

use keel_test_support::{Error, JsonLinesProcess, ProcessBuilder};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::WAIT;

/// A line-oriented JSON-RPC server: `echo` returns its params, `notify` sends a notification
/// before answering, `ask` sends a server request and answers with the client's reply, `env`
/// returns an environment variable, `garbage` prints a non-JSON line, `ignore` never answers,
/// `exit` exits with a code after writing to stderr.
const SERVER: &str = r#"
import json, os, sys
sys.stderr.write("server starting\n"); sys.stderr.flush()
def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, id, params = msg.get("method"), msg.get("id"), msg.get("params")
    if method == "echo":
        send({"jsonrpc": "2.0", "id": id, "result": params})
    elif method == "notify":
        send({"jsonrpc": "2.0", "method": "progress", "params": {"step": 1}})
        send({"jsonrpc": "2.0", "id": id, "result": "notified"})
    elif method == "ask":
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "confirm", "params": {"q": "ok?"}})
        reply = json.loads(sys.stdin.readline())
        send({"jsonrpc": "2.0", "id": id, "result": {"answer": reply.get("result")}})
    elif method == "fail":
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "nope"}})
    elif method == "env":
        send({"jsonrpc": "2.0", "id": id, "result": os.environ.get(params["name"])})
    elif method == "garbage":
        print("this is not json", flush=True)
    elif method == "exit":
        sys.stderr.write("dying on purpose\n"); sys.stderr.flush()
        sys.exit(3)
"#;

fn python_server() -> anyhow::Result<JsonLinesProcess> {
    Ok(ProcessBuilder::new("python3")
        .args(["-u", "-c", SERVER])
        .home_var("KEEL_HOME")
        .env("GREETING", "hello")
        .timeout(WAIT)
        .spawn()?)
}

#[tokio::test]
async fn requests_notifications_and_server_requests() -> anyhow::Result<()> {
    let mut server = python_server()?;
    assert_eq!(
        server.request("echo", json!({"a": 1})).await?,
        json!({"a": 1})
    );

    // The notification arrives before the response; reading the response first keeps it.
    let id = server.send_request("notify", json!({})).await?;
    assert_eq!(server.read_result(id).await?, json!("notified"));
    let note = server.read_notification("progress").await?;
    assert_eq!(note["params"], json!({"step": 1}));

    let id = server.send_request("ask", json!({})).await?;
    let asked = server.read_server_request().await?;
    assert_eq!(asked["method"], json!("confirm"));
    server.respond(asked["id"].clone(), json!("yes")).await?;
    assert_eq!(server.read_result(id).await?, json!({"answer": "yes"}));

    let failed = server.request("fail", json!({})).await;
    assert!(
        matches!(&failed, Err(Error::JsonRpc { error, .. }) if error["code"] == json!(-32000)),
        "{failed:?}"
    );
    assert_eq!(server.unread().count(), 0);
    Ok(())
}

#[tokio::test]
async fn the_child_gets_a_temporary_home_and_its_own_env() -> anyhow::Result<()> {
    let mut server = python_server()?;
    let home = server.home().to_owned();
    assert!(home.is_dir());
    for (name, expected) in [
        ("HOME", json!(home.to_string_lossy())),
        ("KEEL_HOME", json!(home.to_string_lossy())),
        ("GREETING", json!("hello")),
    ] {
        assert_eq!(
            server.request("env", json!({"name": name})).await?,
            expected,
            "{name}"
        );
    }
    assert_eq!(
        std::env::var_os("GREETING"),
        None,
        "the test's own env is untouched"
    );
    drop(server);
    assert!(
        !home.exists(),
        "the temporary home is deleted with the process"
    );
    Ok(())
}

#[tokio::test]
async fn waits_time_out_with_the_stderr_in_the_message() -> anyhow::Result<()> {
    let mut server = python_server()?;
    server.set_timeout(Duration::from_millis(200));
    let id = server.send_request("ignore", json!({})).await?;
    let err = server
        .read_response(id)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("timed out"), "{err}");
    assert!(
        err.contains("server starting"),
        "stderr belongs in the message: {err}"
    );
    assert!(
        err.contains("python3"),
        "the command belongs in the message: {err}"
    );
    Ok(())
}

#[tokio::test]
async fn exit_and_garbage_are_reported() -> anyhow::Result<()> {
    let mut server = python_server()?;
    server.send_request("garbage", json!({})).await?;
    let err = server.read_message().await.err();
    assert!(
        matches!(&err, Some(Error::NotJson { line, .. }) if line == "this is not json"),
        "{err:?}"
    );

    let id = server.send_request("exit", json!({})).await?;
    let err = server.read_response(id).await.err();
    let message = err.as_ref().map(ToString::to_string).unwrap_or_default();
    assert!(
        matches!(err, Some(Error::ProcessExited { .. })),
        "{message}"
    );
    assert!(message.contains("dying on purpose"), "{message}");
    assert_eq!(server.wait().await?.code(), Some(3));
    Ok(())
}

#[tokio::test]
async fn cat_echoes_a_request_back_as_a_server_request() -> anyhow::Result<()> {
    let mut cat = ProcessBuilder::new("cat").timeout(WAIT).spawn()?;
    let id = cat.send_request("item/ask", json!({"x": 1})).await?;
    let echoed = cat.read_server_request().await?;
    assert_eq!(
        echoed,
        json!({"jsonrpc": "2.0", "id": id, "method": "item/ask", "params": {"x": 1}})
    );
    cat.close_stdin();
    assert!(cat.wait().await?.success());
    Ok(())
}

#[tokio::test]
async fn kill_reaps_the_child() -> anyhow::Result<()> {
    let mut server = python_server()?;
    let pid = server.pid().unwrap_or_default();
    assert!(pid > 0);
    let status = server.kill().await?;
    assert!(!status.success());
    // Reaped: no zombie entry left in /proc.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    Ok(())
}

#[tokio::test]
async fn without_jsonrpc_field_omits_it() -> anyhow::Result<()> {
    let mut cat = ProcessBuilder::new("cat")
        .without_jsonrpc_field()
        .timeout(WAIT)
        .spawn()?;
    cat.send_notification("initialized", json!({})).await?;
    assert_eq!(
        cat.read_notification("initialized").await?,
        json!({"method": "initialized", "params": {}})
    );
    Ok(())
}

#[test]
fn missing_binaries_are_named_in_the_error() {
    let err = ProcessBuilder::cargo_bin("no-such-binary-here").err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains("cargo build --bin no-such-binary-here"),
        "{message}"
    );
}
