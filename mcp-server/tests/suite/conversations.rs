//! The conversation streaming tools: create, send, stream with `initial_state` buffering.

use std::time::Duration;

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

async fn create(server: &mut TestServer, extra: Value) -> anyhow::Result<Value> {
    let mut args = json!({"cwd": server.ws_arg()});
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    let result = server.mcp.call_tool("conversationCreate", args).await?;
    assert!(!is_error(&result), "{result}");
    assert_eq!(result["structuredContent"]["model"], json!("mock-model"));
    Ok(result["structuredContent"]["conversationId"].clone())
}

async fn send(server: &mut TestServer, id: &Value, prompt: &str) -> anyhow::Result<()> {
    let result = server
        .mcp
        .call_tool(
            "conversationSendMessage",
            json!({"conversationId": id, "prompt": prompt}),
        )
        .await?;
    assert_eq!(result["structuredContent"], json!({"ok": true}), "{result}");
    Ok(())
}

/// Starts a stream and returns its request id and the `initial_state` event types.
async fn connect(server: &mut TestServer, id: &Value) -> anyhow::Result<(i64, Vec<String>)> {
    let stream = server
        .mcp
        .send_tool_call("conversationStream", json!({"conversationId": id}))
        .await?;
    let initial = server.mcp.read_notification("initial_state").await?;
    assert_eq!(initial["params"]["_meta"]["conversationId"], *id);
    assert_eq!(initial["params"]["_meta"]["requestId"], json!(stream));
    Ok((stream, types(&initial["params"]["initial_state"]["events"])))
}

fn types(events: &Value) -> Vec<String> {
    events
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter_map(|e| e["msg"]["type"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads live `codex/event`s of stream `stream` until `task_complete`; returns their types.
async fn live_until_complete(server: &mut TestServer, stream: i64) -> anyhow::Result<Vec<String>> {
    let mut seen = Vec::new();
    loop {
        let event = server.mcp.read_notification("codex/event").await?;
        assert_eq!(
            event["params"]["_meta"]["requestId"],
            json!(stream),
            "{event}"
        );
        let ty = event["params"]["msg"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        seen.push(ty.clone());
        if ty == "task_complete" {
            return Ok(seen);
        }
    }
}

fn two_turn_script() -> Script {
    Script::new([
        Turn::new([assistant_message("first")]),
        Turn::new([assistant_message("second")]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_then_send_gets_an_empty_initial_state_then_live_events() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(two_turn_script(), &[]).await?;
    let id = create(&mut server, json!({})).await?;
    let (stream, initial) = connect(&mut server, &id).await?;
    assert_eq!(initial, Vec::<String>::new());
    send(&mut server, &id, "hello").await?;
    let live = live_until_complete(&mut server, stream).await?;
    assert_eq!(live.first().map(String::as_str), Some("task_started"));
    assert!(live.contains(&"agent_message".to_string()), "{live:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_then_connect_gets_the_events_in_initial_state() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(two_turn_script(), &[]).await?;
    let id = create(&mut server, json!({})).await?;
    send(&mut server, &id, "hello").await?;
    server
        .mock
        .wait_for_requests(1, Duration::from_secs(30))
        .await?;
    let (stream, initial) = connect(&mut server, &id).await?;
    assert_eq!(
        initial.first().map(String::as_str),
        Some("task_started"),
        "{initial:?}"
    );
    // The turn may finish before or after the stream attaches; together the two parts hold
    // the whole turn, in order, once.
    let mut all = initial.clone();
    if !initial.contains(&"task_complete".to_string()) {
        all.extend(live_until_complete(&mut server, stream).await?);
    }
    assert_eq!(
        all.iter().filter(|t| *t == "task_started").count(),
        1,
        "{all:?}"
    );
    assert_eq!(
        all.last().map(String::as_str),
        Some("task_complete"),
        "{all:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_then_reconnect_catches_up_in_order() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(two_turn_script(), &[]).await?;
    let id = create(&mut server, json!({})).await?;
    let (first_stream, _) = connect(&mut server, &id).await?;
    send(&mut server, &id, "one").await?;
    live_until_complete(&mut server, first_stream).await?;
    server.mcp.cancel(first_stream).await?;
    let ended = server.mcp.read_result(first_stream).await?;
    assert!(result_text(&ended).contains("cancelled"), "{ended}");

    send(&mut server, &id, "two").await?;
    server
        .mock
        .wait_for_requests(2, Duration::from_secs(30))
        .await?;
    let (second_stream, initial) = connect(&mut server, &id).await?;
    let mut all = initial.clone();
    if !initial.contains(&"task_complete".to_string()) {
        all.extend(live_until_complete(&mut server, second_stream).await?);
    }
    // Only the second turn's events, from its start, in order.
    assert_eq!(
        all.first().map(String::as_str),
        Some("task_started"),
        "{all:?}"
    );
    assert_eq!(
        all.iter().filter(|t| *t == "task_started").count(),
        1,
        "{all:?}"
    );
    assert_eq!(
        all.last().map(String::as_str),
        Some("task_complete"),
        "{all:?}"
    );
    let requests = server.mock.requests();
    assert!(serde_json::to_string(requests[1].input())?.contains("first"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_held_until_a_stream_connects() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo held > held.txt"])]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut server = TestServer::initialized(script, &[]).await?;
    let id = create(&mut server, json!({"approval-policy": "untrusted"})).await?;
    send(&mut server, &id, "go").await?;
    server
        .mock
        .wait_for_requests(1, Duration::from_secs(30))
        .await?;
    // No elicitation while nobody streams: the first one must follow initial_state. The
    // approval request usually lands before the stream attaches (then initial_state holds it
    // and the held elicitation follows); if the engine is slower it arrives live. Either way
    // exactly one elicitation, after initial_state, names the stream call.
    assert!(
        server
            .mcp
            .unread()
            .all(|m| m.get("method") != Some(&json!("elicitation/create"))),
        "elicitation sent while nobody streamed"
    );
    let (stream, initial) = connect(&mut server, &id).await?;
    let elicitation = server.mcp.read_elicitation().await?;
    if !initial.contains(&"exec_approval_request".to_string()) {
        eprintln!("approval arrived live, not held: {initial:?}");
    }
    assert_eq!(
        elicitation["params"]["codex_mcp_tool_call_id"],
        json!(stream.to_string())
    );
    server
        .mcp
        .respond(elicitation["id"].clone(), json!({"action": "accept"}))
        .await?;
    live_until_complete(&mut server, stream).await?;
    assert_eq!(
        std::fs::read_to_string(server.ws().join("held.txt"))?,
        "held\n"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_conversation_ids_are_errors() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(Script::new([]), &[]).await?;
    let unknown = "0199a213-81c0-7800-8aa1-bbab2a035a53";
    let result = server
        .mcp
        .call_tool(
            "conversationSendMessage",
            json!({"conversationId": unknown, "prompt": "x"}),
        )
        .await?;
    assert!(
        is_error(&result) && result_text(&result).contains(unknown),
        "{result}"
    );
    let result = server
        .mcp
        .call_tool("conversationStream", json!({"conversationId": "nope"}))
        .await?;
    assert!(
        is_error(&result) && result_text(&result).contains("nope"),
        "{result}"
    );
    Ok(())
}
