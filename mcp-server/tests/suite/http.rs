//! `keel-mcp-server --listen http://…`: MCP over Streamable HTTP, sessions (2025-11-25) and
//! stateless requests (2026-07-28), against the mock model over real HTTP.

use keel_test_support::{ProcessBuilder, Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::SERVER_BIN;
use super::http_client::{HttpServer, SseReader, WAIT};

fn shell_then_answer(answer: &str) -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo made > made.txt"])]),
        Turn::new([assistant_message(answer)]),
        Turn::new([assistant_message("second answer")]),
    ])
}

fn codex_call(id: i64, server: &HttpServer, extra: Value) -> Value {
    let mut arguments = json!({"prompt": "make a file", "cwd": server.ws_arg()});
    if let (Some(arguments), Some(extra)) = (arguments.as_object_mut(), extra.as_object()) {
        arguments.extend(extra.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "codex", "arguments": arguments}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_streams_a_call_and_a_dropped_stream_resumes_where_it_broke() -> anyhow::Result<()>
{
    let server = HttpServer::start(shell_then_answer("finished"), &[]).await?;
    let mut client = server.client();
    let init = client.initialize().await?;
    assert_eq!(init["result"]["protocolVersion"], json!("2025-11-25"));

    let response = client.post(&codex_call(7, &server, json!({})), &[]).await?;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str()?,
        "text/event-stream"
    );
    let mut stream = SseReader::new(response);
    // The priming event comes first: an id to resume from, a reconnect delay, no message.
    let priming = stream.next().await?.expect("a priming event");
    assert_eq!(priming.data, "");
    assert!(priming.retry.is_some(), "the reconnect delay is sent");
    let first = stream.next().await?.expect("a first message");
    let first_message: Value = serde_json::from_str(&first.data)?;
    assert_eq!(first_message["method"], json!("codex/event"));
    assert_eq!(first_message["params"]["_meta"]["requestId"], json!(7));
    // The connection drops after one message; the call goes on.
    drop(stream);

    let resumed = client
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", client.session.clone().unwrap_or_default())
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &first.id)
        .send()
        .await?;
    assert_eq!(resumed.status(), 200);
    let rest = SseReader::new(resumed).until_response(&json!(7)).await?;
    let sequence = |id: &str| -> u64 {
        id.rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let numbers: Vec<u64> = rest.iter().map(|(id, _)| sequence(id)).collect();
    let expected: Vec<u64> = (sequence(&first.id) + 1..).take(numbers.len()).collect();
    assert_eq!(
        numbers, expected,
        "every message after the last one seen, once each"
    );
    let kinds: Vec<&str> = rest
        .iter()
        .filter_map(|(_, message)| message["params"]["msg"]["type"].as_str())
        .collect();
    assert!(kinds.contains(&"exec_command_end"), "{kinds:?}");
    assert!(kinds.contains(&"task_complete"), "{kinds:?}");
    let (_, result) = rest.last().expect("the response");
    assert_eq!(
        result["result"]["structuredContent"]["content"],
        json!("finished")
    );
    assert_eq!(
        std::fs::read_to_string(server.ws.join("made.txt"))?,
        "made\n"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_asked_on_the_calls_stream_and_answered_by_post() -> anyhow::Result<()> {
    let server = HttpServer::start(shell_then_answer("approved and done"), &[]).await?;
    let mut client = server.client();
    client.initialize().await?;
    let response = client
        .post(
            &codex_call(3, &server, json!({"approval-policy": "untrusted"})),
            &[],
        )
        .await?;
    let mut stream = SseReader::new(response);
    let elicitation = loop {
        let event = stream.next().await?.expect("the elicitation");
        if event.data.is_empty() {
            continue;
        }
        let message: Value = serde_json::from_str(&event.data)?;
        if message["method"] == json!("elicitation/create") {
            break message;
        }
    };
    assert_eq!(elicitation["params"]["codex_mcp_tool_call_id"], json!("3"));
    assert!(
        !server.ws.join("made.txt").exists(),
        "nothing runs before the answer"
    );
    let answer = client
        .post(
            &json!({"jsonrpc": "2.0", "id": elicitation["id"], "result": {"action": "accept", "content": {}}}),
            &[],
        )
        .await?;
    assert_eq!(answer.status(), 202);
    let rest = stream.until_response(&json!(3)).await?;
    let (_, result) = rest.last().expect("the response");
    assert_eq!(
        result["result"]["structuredContent"]["content"],
        json!("approved and done")
    );
    assert_eq!(
        std::fs::read_to_string(server.ws.join("made.txt"))?,
        "made\n"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_separate_and_a_deleted_one_is_gone() -> anyhow::Result<()> {
    let server = HttpServer::start(Script::new([]), &[]).await?;
    let mut alice = server.client();
    let mut bob = server.client();
    alice.initialize().await?;
    bob.initialize().await?;
    assert_ne!(alice.session, bob.session);
    let tools = alice.call_json(1, "tools/list", json!({})).await?;
    assert_eq!(tools["result"]["tools"][0]["name"], json!("codex"));

    let deleted = alice
        .http
        .delete(&server.url)
        .header("mcp-session-id", alice.session.clone().unwrap_or_default())
        .send()
        .await?;
    assert_eq!(deleted.status(), 204);
    let after = alice
        .post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {}}),
            &[],
        )
        .await?;
    assert_eq!(after.status(), 404, "a deleted session is not found");
    assert!(
        after.text().await?.contains("initialize"),
        "and the client is told what to do"
    );

    let pong = bob.call_json(2, "ping", json!({})).await?;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    let no_session = server
        .client()
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            &[],
        )
        .await?;
    assert_eq!(no_session.status(), 400);
    assert!(no_session.text().await?.contains("Mcp-Session-Id"));
    Ok(())
}

/// The `_meta` every stateless request carries.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "keel-http-test", "version": "1"},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_requests_are_checked_and_a_thread_continues_across_requests()
-> anyhow::Result<()> {
    let server = HttpServer::start(shell_then_answer("stateless done"), &[]).await?;
    let client = server.client();
    let headers = |method: &'static str| {
        vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ]
    };

    let discover = client
        .post(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": stateless_meta()}}),
            &headers("server/discover"),
        )
        .await?;
    assert_eq!(discover.status(), 200);
    let discover: Value = discover.json().await?;
    assert_eq!(
        discover["result"]["supportedVersions"][0],
        json!("2026-07-28")
    );
    assert_eq!(discover["result"]["resultType"], json!("complete"));
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        json!("keel-mcp-server")
    );

    // Headers that disagree with the body, a missing `_meta`, and a method this revision
    // dropped are refused with the revision's codes and statuses.
    let mismatch = client
        .post(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": stateless_meta()}}),
            &headers("prompts/list"),
        )
        .await?;
    assert_eq!(mismatch.status(), 400);
    let mismatch: Value = mismatch.json().await?;
    assert_eq!(
        mismatch["error"]["code"],
        json!(keel_mcp_server::HEADER_MISMATCH)
    );
    assert_eq!(mismatch["id"], json!(2));
    let no_meta = client
        .post(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}),
            &headers("tools/list"),
        )
        .await?;
    assert_eq!(no_meta.status(), 400);
    assert_eq!(
        no_meta.json::<Value>().await?["error"]["code"],
        json!(-32602)
    );
    let ping = client
        .post(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": stateless_meta()}}),
            &headers("ping"),
        )
        .await?;
    assert_eq!(ping.status(), 404);
    assert_eq!(ping.json::<Value>().await?["error"]["code"], json!(-32601));

    // A codex call: its events and result on its own stream, under the client's id.
    let mut call = codex_call(1, &server, json!({}));
    call["params"]["_meta"] = stateless_meta();
    let mut call_headers = headers("tools/call");
    call_headers.push(("mcp-name", "codex"));
    let response = client.post(&call, &call_headers).await?;
    assert_eq!(response.status(), 200);
    let messages = SseReader::new(response).until_response(&json!(1)).await?;
    assert!(
        messages
            .iter()
            .all(|(_, message)| message.get("method").is_none()
                || message["method"]
                    .as_str()
                    .is_some_and(|m| !m.starts_with("elicitation"))),
        "no server requests on a stateless stream"
    );
    let event = &messages[0].1;
    assert_eq!(
        event["params"]["_meta"]["requestId"],
        json!(1),
        "the client's id"
    );
    let thread_id = event["params"]["_meta"]["threadId"].clone();
    let (_, result) = messages.last().expect("the response");
    assert_eq!(result["id"], json!(1));
    assert_eq!(result["result"]["resultType"], json!("complete"));
    assert_eq!(
        result["result"]["structuredContent"]["content"],
        json!("stateless done")
    );

    // The same id in a later request, continuing the thread.
    let reply = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "codex-reply",
        "arguments": {"threadId": thread_id, "prompt": "again"},
        "_meta": stateless_meta(),
    }});
    let mut reply_headers = headers("tools/call");
    reply_headers.push(("mcp-name", "codex-reply"));
    let response = client.post(&reply, &reply_headers).await?;
    let messages = SseReader::new(response).until_response(&json!(1)).await?;
    let (_, result) = messages.last().expect("the response");
    assert_eq!(
        result["result"]["structuredContent"]["content"],
        json!("second answer")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_refuses_rebound_origins_strangers_and_open_network_addresses()
-> anyhow::Result<()> {
    let server = HttpServer::start(Script::new([]), &[]).await?;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"}}});
    let rebound = server
        .client()
        .post(&init, &[("origin", "http://evil.example.com")])
        .await?;
    assert_eq!(
        rebound.status(),
        403,
        "a page whose name was rebound to loopback"
    );
    let local_origin = format!(
        "http://{}",
        server
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    );
    let local = server
        .client()
        .post(&init, &[("origin", local_origin.as_str())])
        .await?;
    assert_eq!(
        local.status(),
        200,
        "a loopback origin is this machine's own page"
    );

    let dir = tempfile::tempdir()?;
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token")?;
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )?;
    let token_file = token_file.display().to_string();
    let guarded = HttpServer::start(
        Script::new([]),
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            &token_file,
            "--max-line-bytes",
            "4096",
        ],
    )
    .await?;
    let stranger = guarded.client().post(&init, &[]).await?;
    assert_eq!(stranger.status(), 401);
    let holder = guarded
        .client()
        .post(&init, &[("authorization", "Bearer s3cret-token")])
        .await?;
    assert_eq!(holder.status(), 200);
    let mut huge = init.clone();
    huge["params"]["clientInfo"]["name"] = json!("x".repeat(8192));
    let too_big = guarded
        .client()
        .post(&huge, &[("authorization", "Bearer s3cret-token")])
        .await?;
    let status = too_big.status();
    assert_eq!(
        status,
        413,
        "a body over --max-line-bytes: {}",
        too_big.text().await?
    );

    let home = tempfile::tempdir()?;
    let mut open = ProcessBuilder::new(SERVER_BIN)
        .args(["--listen", "http://0.0.0.0:0"])
        .home_var("KEEL_HOME")
        .home(home)
        .spawn()?;
    let status = tokio::time::timeout(WAIT, open.wait()).await??;
    assert_eq!(status.code(), Some(2));
    assert!(
        open.stderr().contains("without authentication"),
        "{}",
        open.stderr()
    );
    Ok(())
}
