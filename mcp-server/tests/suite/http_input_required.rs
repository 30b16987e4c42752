//! Approvals on MCP 2026-07-28 (stateless): a call that needs one ends its answer with an
//! `input_required` result, and the client's retry carrying `inputResponses` and the echoed
//! `requestState` continues the same call. Against the mock model over real HTTP.

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http_client::{HttpMcp, HttpServer, SseReader};

fn shell_then_answer(answer: &str) -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo made > made.txt"])]),
        Turn::new([assistant_message(answer)]),
    ])
}

/// The `_meta` of a stateless request from a client that can answer questions.
fn meta_with_elicitation() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "keel-mrtr-test", "version": "1"},
    })
}

/// A stateless `tools/call` of `codex` (or its retry, with `retry` fields merged in params),
/// answered as SSE; returns every message up to the response to `id`.
async fn call(
    client: &HttpMcp,
    server: &HttpServer,
    id: i64,
    retry: Value,
) -> anyhow::Result<(u16, Vec<Value>)> {
    let mut params = json!({
        "name": "codex",
        "arguments": {"prompt": "make a file", "cwd": server.ws_arg(), "approval-policy": "untrusted"},
        "_meta": meta_with_elicitation(),
    });
    if let (Some(params), Some(retry)) = (params.as_object_mut(), retry.as_object()) {
        params.extend(retry.clone());
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "codex"),
    ];
    let response = client.post(&body, &headers).await?;
    let status = response.status().as_u16();
    let is_stream = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    if !is_stream {
        return Ok((status, vec![response.json().await?]));
    }
    let messages = SseReader::new(response).until_response(&json!(id)).await?;
    Ok((
        status,
        messages.into_iter().map(|(_, message)| message).collect(),
    ))
}

/// The single question of an `input_required` result: its key and the request.
fn only_question(result: &Value) -> anyhow::Result<(String, Value)> {
    let requests = result["inputRequests"]
        .as_object()
        .ok_or_else(|| anyhow::anyhow!("no inputRequests in {result}"))?;
    anyhow::ensure!(requests.len() == 1, "one question at a time: {result}");
    let (key, request) = requests
        .iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no question in {result}"))?;
    Ok((key.clone(), request.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_approval_is_asked_as_input_required_and_answered_by_the_retry()
-> anyhow::Result<()> {
    let server = HttpServer::start(shell_then_answer("approved and done"), &[]).await?;
    let client = server.client();

    let (status, first) = call(&client, &server, 1, json!({})).await?;
    assert_eq!(status, 200);
    assert!(
        first
            .iter()
            .all(|message| message.get("method") != Some(&json!("elicitation/create"))),
        "no server request on a stateless stream: {first:?}"
    );
    let asked = &first.last().expect("the answer")["result"];
    assert_eq!(asked["resultType"], json!("input_required"));
    let (key, question) = only_question(asked)?;
    assert_eq!(question["method"], json!("elicitation/create"));
    assert_eq!(
        question["params"]["codex_elicitation"],
        json!("exec-approval")
    );
    assert_eq!(
        question["params"]["codex_command"],
        json!(["bash", "-lc", "echo made > made.txt"])
    );
    let state = asked["requestState"].as_str().expect("requestState");
    assert!(
        !server.ws.join("made.txt").exists(),
        "nothing runs before the answer"
    );

    // A forged handle names nothing.
    let forged = format!("{state}-TAMPERED");
    let (status, refused) = call(
        &client,
        &server,
        2,
        json!({"requestState": forged, "inputResponses": {key.clone(): {"action": "accept", "content": {}}}}),
    )
    .await?;
    assert_eq!(status, 400);
    assert_eq!(refused[0]["error"]["code"], json!(-32602));
    assert_eq!(refused[0]["id"], json!(2));

    // A retry that answers nothing is asked again, under a new handle.
    let (_, again) = call(
        &client,
        &server,
        3,
        json!({"requestState": state, "inputResponses": {"unasked": {"action": "accept"}}}),
    )
    .await?;
    let asked_again = &again.last().expect("the answer")["result"];
    assert_eq!(asked_again["resultType"], json!("input_required"));
    assert_eq!(only_question(asked_again)?.0, key);
    let next_state = asked_again["requestState"].as_str().expect("requestState");
    assert_ne!(next_state, state, "each handle is good for one retry");

    // The answer: the same call continues on the retry's stream and finishes.
    let (status, rest) = call(
        &client,
        &server,
        4,
        json!({"requestState": next_state, "inputResponses": {key.clone(): {"action": "accept", "content": {}}}}),
    )
    .await?;
    assert_eq!(status, 200);
    let done = rest.last().expect("the result");
    assert_eq!(done["id"], json!(4), "under the retry's id");
    assert_eq!(done["result"]["resultType"], json!("complete"));
    assert_eq!(
        done["result"]["structuredContent"]["content"],
        json!("approved and done")
    );
    assert!(
        rest.iter().any(
            |message| message["params"]["msg"]["type"] == json!("exec_command_end")
                && message["params"]["_meta"]["requestId"] == json!(4)
        ),
        "the command's events come on the retry's stream: {rest:?}"
    );
    assert_eq!(
        std::fs::read_to_string(server.ws.join("made.txt"))?,
        "made\n"
    );

    // A used handle is gone.
    let (status, used) = call(
        &client,
        &server,
        5,
        json!({"requestState": next_state, "inputResponses": {key: {"action": "accept"}}}),
    )
    .await?;
    assert_eq!(status, 400);
    assert_eq!(used[0]["error"]["code"], json!(-32602));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_stateless_approval_runs_nothing() -> anyhow::Result<()> {
    let server = HttpServer::start(shell_then_answer("declined, so done"), &[]).await?;
    let client = server.client();
    let (_, first) = call(&client, &server, 1, json!({})).await?;
    let asked = &first.last().expect("the answer")["result"];
    let (key, _) = only_question(asked)?;
    let (_, rest) = call(
        &client,
        &server,
        2,
        json!({"requestState": asked["requestState"], "inputResponses": {key: {"action": "decline"}}}),
    )
    .await?;
    let done = rest.last().expect("the result");
    assert_eq!(
        done["result"]["structuredContent"]["content"],
        json!("declined, so done")
    );
    assert!(
        !server.ws.join("made.txt").exists(),
        "a declined command never runs"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_nobody_comes_back_for_is_cancelled() -> anyhow::Result<()> {
    let mut server = HttpServer::start(
        shell_then_answer("never reached"),
        &["--session-idle-timeout", "1"],
    )
    .await?;
    let client = server.client();
    let (_, first) = call(&client, &server, 1, json!({})).await?;
    let asked = first.last().expect("the answer")["result"].clone();
    assert_eq!(asked["resultType"], json!("input_required"));
    server
        ._process
        .wait_for_stderr_line("the waiting call's cancellation", |line| {
            line.contains("cancelling its call")
        })
        .await?;
    let (key, _) = only_question(&asked)?;
    let (status, late) = call(
        &client,
        &server,
        2,
        json!({"requestState": asked["requestState"], "inputResponses": {key: {"action": "accept"}}}),
    )
    .await?;
    assert_eq!(status, 400, "the handle expired with its call: {late:?}");
    assert!(!server.ws.join("made.txt").exists());
    Ok(())
}
