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

async fn status(server: &mut TestServer, id: &Value) -> anyhow::Result<Value> {
    let result = server
        .mcp
        .call_tool("conversationStatus", json!({"conversationId": id}))
        .await?;
    assert!(!is_error(&result), "{result}");
    Ok(result["structuredContent"].clone())
}

/// Asks `conversationStatus` until `ready` accepts the answer. Every round trip goes through
/// the server, so this waits on the server's progress, bounded by a deadline.
async fn wait_for_status(
    server: &mut TestServer,
    id: &Value,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let polled = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let status = status(server, id).await?;
            if ready(&status) {
                return anyhow::Ok(status);
            }
        }
    })
    .await;
    polled.map_err(|_| anyhow::anyhow!("timed out waiting for {what}"))?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_held_until_a_stream_connects() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo held > held.txt"])]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut server = TestServer::initialized(script, &[]).await?;
    let id = create(&mut server, json!({"approval-policy": "untrusted"})).await?;
    assert_eq!(
        status(&mut server, &id).await?,
        json!({"conversationId": id, "streaming": false, "bufferedEvents": 0, "heldApprovals": []})
    );
    send(&mut server, &id, "go").await?;
    // The turn now waits for the approval, which the server holds: nobody streams.
    let held = wait_for_status(&mut server, &id, "a held approval", |status| {
        status["heldApprovals"] != json!([])
    })
    .await?;
    assert_eq!(
        held["heldApprovals"],
        json!([{"kind": "exec", "callId": "c1"}])
    );
    assert_eq!(held["streaming"], json!(false));
    assert!(
        server
            .mcp
            .unread()
            .all(|m| m.get("method") != Some(&json!("elicitation/create"))),
        "elicitation sent while nobody streamed"
    );

    // initial_state carries the approval request; the held elicitation follows it and names
    // the stream call.
    let (stream, initial) = connect(&mut server, &id).await?;
    assert_eq!(initial.first().map(String::as_str), Some("task_started"));
    assert_eq!(
        initial.last().map(String::as_str),
        Some("exec_approval_request"),
        "{initial:?}"
    );
    let elicitation = server.mcp.read_elicitation().await?;
    assert_eq!(
        elicitation["params"]["codex_mcp_tool_call_id"],
        json!(stream.to_string())
    );
    assert_eq!(elicitation["params"]["codex_call_id"], json!("c1"));
    let attached = status(&mut server, &id).await?;
    assert_eq!(
        (&attached["streaming"], &attached["heldApprovals"]),
        (&json!(true), &json!([]))
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
async fn a_stream_cancelled_at_once_ends_and_buffering_resumes() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(two_turn_script(), &[]).await?;
    let id = create(&mut server, json!({})).await?;
    // The cancellation follows the call at once, usually before the call has attached; it
    // must end the call either way.
    let stream = server
        .mcp
        .send_tool_call("conversationStream", json!({"conversationId": id}))
        .await?;
    server.mcp.cancel(stream).await?;
    let ended = server.mcp.read_result(stream).await?;
    assert!(result_text(&ended).contains("cancelled"), "{ended}");
    assert_eq!(status(&mut server, &id).await?["streaming"], json!(false));

    send(&mut server, &id, "hello").await?;
    let done = wait_for_status(&mut server, &id, "a buffered turn", |status| {
        status["bufferedEvents"].as_u64().unwrap_or(0) > 0
    })
    .await?;
    assert_eq!(done["streaming"], json!(false));
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
    for tool in ["conversationStream", "conversationStatus"] {
        let result = server
            .mcp
            .call_tool(tool, json!({"conversationId": "nope"}))
            .await?;
        assert!(
            is_error(&result) && result_text(&result).contains("nope"),
            "{tool}: {result}"
        );
    }
    Ok(())
}
