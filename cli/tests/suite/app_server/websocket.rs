use std::time::Duration;

use futures::{SinkExt, StreamExt};
use keel_test_support::{
    JsonLinesProcess, MarkedSleeper, Script, Turn, assistant_message, exec_command_call, shell_call,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::common::*;

const WAIT: Duration = Duration::from_secs(20);

/// Starts `keel app-server --listen ws://127.0.0.1:0` and returns it with its address.
pub(super) async fn listen(world: &World) -> anyhow::Result<(JsonLinesProcess, String)> {
    let mut process = world
        .builder()
        .args(["--listen", "ws://127.0.0.1:0"])
        .spawn()?;
    let addr = process.websocket_address().await?;
    Ok((process, addr))
}

pub(super) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub(super) async fn send(socket: &mut Socket, value: Value) -> anyhow::Result<()> {
    socket.send(Message::Text(value.to_string().into())).await?;
    Ok(())
}

pub(super) async fn read_until(
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
        keel_core::install_tls_provider();
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
    // A message many times the server's read buffer (8 KiB) arrives whole.
    let long = format!("go {}end-of-long", "x".repeat(300 * 1024));
    send(&mut socket, json!({"id": 3, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": long}]}})).await?;
    let completed = read_until(&mut socket, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    let first = world.mock.requests().first().map(|r| r.body.to_string());
    assert!(
        first.is_some_and(|body| body.contains(long.as_str())),
        "the model got the whole message"
    );
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

/// Connects and completes the handshake.
async fn connect(addr: &str, name: &str) -> anyhow::Result<Socket> {
    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/")).await?;
    send(&mut socket, json!({"id": 0, "method": "initialize", "params": {"clientInfo": {"name": name, "version": "1"}}})).await?;
    read_until(&mut socket, |m| m["id"] == 0).await?;
    send(&mut socket, json!({"method": "initialized"})).await?;
    Ok(socket)
}

/// Sends a request and returns every message read up to and including its answer.
async fn request(
    socket: &mut Socket,
    id: u64,
    method: &str,
    params: Value,
) -> anyhow::Result<Vec<Value>> {
    send(
        socket,
        json!({"id": id, "method": method, "params": params}),
    )
    .await?;
    let mut seen = Vec::new();
    loop {
        let message = read_until(socket, |_| true).await?;
        let done = message["id"] == id && message.get("method").is_none();
        seen.push(message);
        if done {
            return Ok(seen);
        }
    }
}

/// Ids of the loaded threads, as `thread/loaded/list` answers.
async fn loaded(socket: &mut Socket, id: u64) -> anyhow::Result<Vec<Value>> {
    let seen = request(socket, id, "thread/loaded/list", json!({})).await?;
    let answer = seen.last().cloned().unwrap_or_default();
    Ok(answer["result"]["data"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_unload_when_no_connection_follows_them() -> anyhow::Result<()> {
    let world = World::new(Script::new([Turn::new([assistant_message("for b")])]), &[]).await?;
    let (_server, addr) = listen(&world).await?;
    let mut a = connect(&addr, "a").await?;
    let mut b = connect(&addr, "b").await?;

    let start = request(&mut a, 1, "thread/start", json!({"cwd": world.ws()})).await?;
    let thread_id = start.last().cloned().unwrap_or_default()["result"]["thread"]["id"].clone();
    request(&mut b, 1, "thread/resume", json!({"threadId": thread_id})).await?;

    // A leaves; B still follows, so the thread stays loaded and A hears nothing more of it.
    let left = request(
        &mut a,
        2,
        "thread/unsubscribe",
        json!({"threadId": thread_id}),
    )
    .await?;
    assert_eq!(
        left.last().cloned().unwrap_or_default()["result"]["status"],
        "unsubscribed"
    );
    assert!(
        !methods(&left).iter().any(|m| m == "thread/closed"),
        "{left:?}"
    );
    assert_eq!(loaded(&mut a, 3).await?, vec![thread_id.clone()]);
    send(&mut b, json!({"id": 2, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": "go"}]}})).await?;
    let completed = read_until(&mut b, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    let quiet = request(&mut a, 4, "thread/loaded/list", json!({})).await?;
    let leaked: Vec<String> = methods(&quiet)
        .into_iter()
        .filter(|m| m.starts_with("turn/") || m.starts_with("item/") || m.starts_with("thread/"))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");

    // B, the last subscriber, leaves: the thread is unloaded and B is told so.
    let left = request(
        &mut b,
        3,
        "thread/unsubscribe",
        json!({"threadId": thread_id}),
    )
    .await?;
    assert_eq!(
        left.last().cloned().unwrap_or_default()["result"]["status"],
        "unsubscribed"
    );
    read_until(&mut b, |m| {
        m["method"] == "thread/closed" && m["params"]["threadId"] == thread_id
    })
    .await?;
    assert_eq!(loaded(&mut a, 5).await?, Vec::<Value>::new());

    // A connection that disconnects takes its idle threads with it.
    let mut c = connect(&addr, "c").await?;
    let start = request(&mut c, 1, "thread/start", json!({"cwd": world.ws()})).await?;
    let dropped = start.last().cloned().unwrap_or_default()["result"]["thread"]["id"].clone();
    assert_eq!(loaded(&mut a, 6).await?, vec![dropped.clone()]);
    c.close(None).await?;
    drop(c);
    // The server notices the close on its own task: ask until the thread is gone.
    let mut id = 7;
    tokio::time::timeout(WAIT, async {
        while !loaded(&mut a, id).await?.is_empty() {
            id += 1;
        }
        anyhow::Ok(())
    })
    .await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_left_by_a_dropped_client_is_asked_again_on_resume() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["touch", "approved.txt"])]),
        Turn::new([assistant_message("touched")]),
    ]);
    let world = World::new(script, &[("approval_policy", "untrusted".into())]).await?;
    let (_server, addr) = listen(&world).await?;

    let mut a = connect(&addr, "a").await?;
    let start = request(&mut a, 1, "thread/start", json!({"cwd": world.ws()})).await?;
    let thread_id = start.last().cloned().unwrap_or_default()["result"]["thread"]["id"].clone();
    send(&mut a, json!({"id": 2, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": "touch it"}]}})).await?;
    let asked = read_until(&mut a, |m| {
        m["method"] == "item/commandExecution/requestApproval"
    })
    .await?;
    assert_eq!(asked["params"]["itemId"], "c1");
    // A goes away without answering: that decides nothing.
    a.close(None).await?;
    drop(a);

    let mut b = connect(&addr, "b").await?;
    let resumed = request(&mut b, 1, "thread/resume", json!({"threadId": thread_id})).await?;
    let answer = resumed.last().cloned().unwrap_or_default();
    assert_eq!(answer["result"]["thread"]["status"]["type"], "active");
    let asked = read_until(&mut b, |m| {
        m["method"] == "item/commandExecution/requestApproval"
    })
    .await?;
    assert_eq!(asked["params"]["itemId"], "c1");
    assert_eq!(asked["params"]["threadId"], thread_id);
    send(
        &mut b,
        json!({"id": asked["id"], "result": {"decision": "accept"}}),
    )
    .await?;
    let completed = read_until(&mut b, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    assert!(world.ws_file("approved.txt").exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_thread_left_by_its_client_unloads_when_its_turn_ends() -> anyhow::Result<()> {
    // The command runs until the test creates `go`, so the turn is surely running when the
    // client leaves.
    let script = Script::new([
        Turn::new([shell_call(
            "c1",
            ["sh", "-c", "while [ ! -e go ]; do sleep 0.02; done"],
        )]),
        Turn::new([assistant_message("went")]),
    ]);
    let world = World::new(script, &[]).await?;
    let (_server, addr) = listen(&world).await?;

    let mut c = connect(&addr, "c").await?;
    let start = request(&mut c, 1, "thread/start", json!({"cwd": world.ws()})).await?;
    let thread_id = start.last().cloned().unwrap_or_default()["result"]["thread"]["id"].clone();
    send(&mut c, json!({"id": 2, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": "wait"}]}})).await?;
    read_until(&mut c, |m| {
        m["method"] == "item/started" && m["params"]["item"]["type"] == "commandExecution"
    })
    .await?;
    c.close(None).await?;
    drop(c);

    let mut a = connect(&addr, "a").await?;
    assert_eq!(loaded(&mut a, 1).await?, vec![thread_id.clone()]);
    std::fs::write(world.ws_file("go"), "")?;
    let mut id = 2;
    tokio::time::timeout(WAIT, async {
        while !loaded(&mut a, id).await?.is_empty() {
            id += 1;
        }
        anyhow::Ok(())
    })
    .await??;
    // The turn was not cut short: its rollout holds the final answer.
    let read = request(
        &mut a,
        id + 1,
        "thread/read",
        json!({"threadId": thread_id, "includeTurns": true}),
    )
    .await?;
    let turns = read.last().cloned().unwrap_or_default()["result"]["thread"]["turns"].clone();
    let items = turns[0]["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        items.last().map(|item| item["text"].clone()),
        Some(json!("went")),
        "{turns}"
    );
    Ok(())
}

/// One subscriber never reads while another runs 100 turns on the same thread at full speed:
/// the reader finishes all of them, and the stalled one, once it reads, finds every turn's
/// completion, and every streamed delta either delivered or counted in a `warning`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_slows_no_one_and_loses_nothing_essential() -> anyhow::Result<()> {
    const TURNS: usize = 100;
    let words: Vec<String> = (0..150).map(|n| format!("word{n}")).collect();
    let answer = words.join(" ");
    let mock = keel_test_support::MockModelServer::builder()
        .script(Script::new([Turn::new([assistant_message(
            answer.clone(),
        )])]))
        .repeat(true)
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    keel_test_support::write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let world = World {
        mock,
        home,
        workspace,
    };
    let (_server, addr) = listen(&world).await?;
    let mut fast = connect(&addr, "fast").await?;
    let mut stalled = connect(&addr, "stalled").await?;
    let start = request(&mut fast, 1, "thread/start", json!({"cwd": world.ws()})).await?;
    let thread_id = start.last().cloned().unwrap_or_default()["result"]["thread"]["id"].clone();
    request(
        &mut stalled,
        1,
        "thread/resume",
        json!({"threadId": thread_id}),
    )
    .await?;

    // From here on `stalled` reads nothing until `fast` is done.
    let mut sent_droppable = 0u64;
    for turn in 0..TURNS {
        let id = 10 + turn as u64;
        send(&mut fast, json!({"id": id, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": "go"}]}})).await?;
        let completed = read_until(&mut fast, |m| {
            sent_droppable += u64::from(droppable(m));
            m["method"] == "turn/completed"
        })
        .await?;
        assert_eq!(completed["params"]["turn"]["status"], "completed");
    }
    assert!(sent_droppable >= (TURNS * words.len()) as u64);

    let mut completions = 0;
    let mut received_droppable = 0u64;
    let mut missed = 0u64;
    while completions < TURNS {
        let message = read_until(&mut stalled, |_| true).await?;
        received_droppable += u64::from(droppable(&message));
        match message["method"].as_str() {
            Some("turn/completed") => completions += 1,
            Some("warning") => {
                let text = message["params"]["message"].as_str().unwrap_or_default();
                missed += text
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or_default();
            }
            _ => {}
        }
    }
    assert_eq!(
        received_droppable + missed,
        sent_droppable,
        "every streamed notification is delivered or counted"
    );
    Ok(())
}

/// Whether `message` is one the server may drop for a client that falls behind.
fn droppable(message: &Value) -> bool {
    matches!(
        message["method"].as_str(),
        Some(
            "item/agentMessage/delta"
                | "item/commandExecution/outputDelta"
                | "item/reasoning/summaryTextDelta"
                | "thread/tokenUsage/updated"
                | "turn/diff/updated"
        )
    )
}

/// A client leaves a thread whose finished turn left an `exec_command` session running (a
/// server with `setsid` and double-forked children): the thread unloads, and the session
/// and everything it started go with it, while the server itself keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_clients_background_sessions_end_with_its_thread() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let sleeper = MarkedSleeper::new(scratch.path(), "ws-disconnect")?;
    let script = Script::new([
        Turn::new([exec_command_call(
            "server",
            json!({"cmd": sleeper.nested_command(60), "yield_time_ms": 250}),
        )]),
        Turn::new([assistant_message("the server runs")]),
    ]);
    let world = World::new(script, &[]).await?;
    let (_server, addr) = listen(&world).await?;
    let mut c = connect(&addr, "c").await?;
    let start = request(&mut c, 1, "thread/start", json!({"cwd": world.ws()})).await?;
    let thread_id = start.last().cloned().unwrap_or_default()["result"]["thread"]["id"].clone();
    send(&mut c, json!({"id": 2, "method": "turn/start", "params": {"threadId": thread_id, "input": [{"type": "text", "text": "start a server"}]}})).await?;
    read_until(&mut c, |m| m["method"] == "turn/completed").await?;
    // The process table has no change notification: look until the session's processes run.
    tokio::time::timeout(WAIT, async {
        while sleeper.live_processes().len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("the session's processes never ran"))?;
    c.close(None).await?;
    drop(c);
    sleeper.wait_until_gone(WAIT).await?;
    let mut again = connect(&addr, "again").await?;
    assert_eq!(loaded(&mut again, 1).await?, Vec::<Value>::new());
    Ok(())
}

/// `/readyz` means ready for new clients: on SIGTERM with `--drain-seconds` the server keeps
/// serving its connected clients while `/readyz` answers 503 naming the drain (a load
/// balancer's health check then sends it no one new) and `/healthz` still says alive; a second
/// signal stops it at once. A server whose Keel home is gone is not ready either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_server_is_not_ready_but_serves_its_clients() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world
        .builder()
        .args(["--listen", "ws://127.0.0.1:0", "--drain-seconds", "600"])
        .spawn()?;
    let addr = server.websocket_address().await?;
    keel_core::install_tls_provider();
    let status = |path: &'static str| {
        let url = format!("http://{addr}/{path}");
        async move {
            let response = reqwest::get(url).await?;
            let status = response.status().as_u16();
            anyhow::Ok((status, response.text().await?))
        }
    };
    assert_eq!(status("readyz").await?.0, 200);
    // A server whose threads cannot be reached is not ready either.
    let home = world.home.path().to_path_buf();
    let away = home.with_extension("away");
    std::fs::rename(&home, &away)?;
    let unreachable = status("readyz").await;
    std::fs::rename(&away, &home)?;
    let (code, body) = unreachable?;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("threads unreachable"), "{body}");
    assert_eq!(status("readyz").await?.0, 200);

    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/")).await?;
    send(&mut socket, json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "ws", "version": "1"}}})).await?;
    read_until(&mut socket, |m| m["id"] == 1).await?;

    server.signal(nix::sys::signal::Signal::SIGTERM)?;
    server
        .wait_for_stderr_line("the drain", |line| line.contains("draining"))
        .await?;
    let (code, body) = status("readyz").await?;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("draining"), "{body}");
    assert_eq!(status("healthz").await?.0, 200);
    // The connected client is still served.
    send(
        &mut socket,
        json!({"id": 2, "method": "thread/loaded/list", "params": {}}),
    )
    .await?;
    let answer = read_until(&mut socket, |m| m["id"] == 2).await?;
    assert!(answer["result"]["data"].is_array(), "{answer}");

    server.signal(nix::sys::signal::Signal::SIGTERM)?;
    let exit = tokio::time::timeout(WAIT, server.wait()).await??;
    assert!(exit.success(), "{exit:?}");
    Ok(())
}
