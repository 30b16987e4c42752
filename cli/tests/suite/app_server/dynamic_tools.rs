//! The client's own tools (`dynamicTools` on `thread/start`, Codex 0.169's experimental
//! shape): offered to the model, run by the client through `item/tool/call`, shown as
//! `dynamicToolCall` items; a client that fails or goes away fails the call, never the turn.

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, function_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::websocket::{listen, read_until, send};

/// The tools a client registers: one function and one namespace with one function.
fn dynamic_tools() -> Value {
    json!([
        {
            "type": "function",
            "name": "lookup_ticket",
            "description": "Looks a ticket up.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
        },
        {
            "type": "namespace",
            "name": "tracker",
            "description": "The team's tracker.",
            "tools": [{
                "type": "function",
                "name": "close_ticket",
                "description": "Closes a ticket.",
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
                "deferLoading": true
            }]
        }
    ])
}

/// The text the model got back for `call_id`.
fn model_saw(mock: &MockModelServer, call_id: &str) -> String {
    mock.requests()
        .iter()
        .find_map(|r| {
            r.tool_output(call_id)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_a_client_tool_and_gets_the_clients_answer() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call("t1", "lookup_ticket", r#"{"id":"KEEL-12"}"#)]),
        Turn::new([function_call(
            "t2",
            "tracker__close_ticket",
            r#"{"id":"KEEL-12"}"#,
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let mut params = world.thread_params();
    params["dynamicTools"] = dynamic_tools();
    let thread = server.start_thread(params).await?;
    let turn = server.start_turn(&thread, "look it up").await?;

    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/tool/call");
    assert_eq!(
        request["params"],
        json!({
            "threadId": thread,
            "turnId": turn,
            "callId": "t1",
            "tool": "lookup_ticket",
            "namespace": null,
            "arguments": {"id": "KEEL-12"}
        })
    );
    server
        .respond(
            request["id"].clone(),
            json!({"contentItems": [{"type": "inputText", "text": "KEEL-12: in review"}], "success": true}),
        )
        .await?;

    let request = server.read_server_request().await?;
    assert_eq!(request["params"]["tool"], "close_ticket");
    assert_eq!(request["params"]["namespace"], "tracker");
    server
        .respond_error(request["id"].clone(), -32000, "the tracker is down")
        .await?;

    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    let items: Vec<&Value> = completed["turn"]["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["type"] == "dynamicToolCall")
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(items.len(), 2, "{completed}");
    assert_eq!(items[0]["status"], "completed");
    assert_eq!(items[0]["success"], true);
    assert_eq!(items[0]["contentItems"][0]["text"], "KEEL-12: in review");
    assert_eq!(items[1]["status"], "failed");
    assert_eq!(items[1]["namespace"], "tracker");

    assert_eq!(model_saw(&world.mock, "t1"), "KEEL-12: in review");
    assert_eq!(
        model_saw(&world.mock, "t2"),
        "the tool call failed: the client could not run the tool: the tracker is down"
    );
    // Offered after Keel's own tools, the namespaced one under `NAMESPACE__TOOL`.
    let first = &world.mock.requests()[0];
    let names = first.tool_names();
    assert_eq!(
        names[names.len() - 2..],
        [
            "lookup_ticket".to_string(),
            "tracker__close_ticket".to_string()
        ]
    );
    let spec = first.body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "lookup_ticket"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(spec["parameters"]["required"], json!(["id"]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_name_taken_by_keel_is_refused_naming_it() -> anyhow::Result<()> {
    let world = World::new(Script::new([]), &[]).await?;
    let mut server = world.server().await?;
    let mut params = world.thread_params();
    params["dynamicTools"] = json!([{
        "type": "function", "name": "shell", "description": "mine", "inputSchema": {}
    }]);
    let error = server
        .request("thread/start", params)
        .await
        .err()
        .map(|err| err.to_string())
        .unwrap_or_default();
    assert!(error.contains("-32602"), "{error}");
    assert!(error.contains("`shell`"), "{error}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_call_fails_the_call_not_the_turn() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call("t1", "lookup_ticket", r#"{"id":"KEEL-12"}"#)]),
        Turn::new([assistant_message("carried on")]),
    ]);
    let world = World::new(script, &[]).await?;
    let (_server, addr) = listen(&world).await?;
    let url = format!("ws://{addr}/");
    let hello = |id| json!({"id": id, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "1"}}});

    // The client that defines the tools starts the thread...
    let (mut owner, _) = tokio_tungstenite::connect_async(&url).await?;
    send(&mut owner, hello(1)).await?;
    read_until(&mut owner, |m| m["id"] == 1).await?;
    send(&mut owner, json!({"method": "initialized"})).await?;
    let mut params = world.thread_params();
    params["dynamicTools"] = dynamic_tools();
    send(
        &mut owner,
        json!({"id": 2, "method": "thread/start", "params": params}),
    )
    .await?;
    let started = read_until(&mut owner, |m| m["id"] == 2).await?;
    let thread = started["result"]["thread"]["id"].clone();

    // ...a second client follows it and starts a turn.
    let (mut viewer, _) = tokio_tungstenite::connect_async(&url).await?;
    send(&mut viewer, hello(1)).await?;
    read_until(&mut viewer, |m| m["id"] == 1).await?;
    send(&mut viewer, json!({"method": "initialized"})).await?;
    send(
        &mut viewer,
        json!({"id": 2, "method": "thread/resume", "params": {"threadId": thread}}),
    )
    .await?;
    read_until(&mut viewer, |m| m["id"] == 2).await?;
    send(
        &mut viewer,
        json!({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [{"type": "text", "text": "go"}]}}),
    )
    .await?;

    // The call goes to the owner only; it leaves without answering.
    let call = read_until(&mut owner, |m| m["method"] == "item/tool/call").await?;
    assert_eq!(call["params"]["tool"], "lookup_ticket");
    drop(owner);

    let completed = read_until(&mut viewer, |m| m["method"] == "turn/completed").await?;
    assert_eq!(completed["params"]["turn"]["status"], "completed");
    let item = completed["params"]["turn"]["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "dynamicToolCall"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(item["status"], "failed", "{completed}");
    assert_eq!(
        model_saw(&world.mock, "t1"),
        "the tool call failed: the client that defined this tool disconnected before answering"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_waiting_for_the_client_and_a_late_answer_is_harmless()
-> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([function_call("t1", "lookup_ticket", r#"{"id":"KEEL-12"}"#)]),
        Turn::new([assistant_message("second turn")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let mut params = world.thread_params();
    params["dynamicTools"] = dynamic_tools();
    let thread = server.start_thread(params).await?;
    let turn = server.start_turn(&thread, "look it up").await?;
    let call = server.read_server_request().await?;
    assert_eq!(call["method"], "item/tool/call");
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread, "turnId": turn}),
        )
        .await?;
    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "interrupted");
    let item = completed["turn"]["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "dynamicToolCall"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(item["status"], "failed", "{completed}");

    // The answer arrives after the turn ended: nothing breaks, the next turn runs.
    server
        .respond(
            call["id"].clone(),
            json!({"contentItems": [{"type": "inputText", "text": "late"}], "success": true}),
        )
        .await?;
    let next = server.start_turn(&thread, "again").await?;
    let completed = server.read_turn_completed(&next).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_thread_offers_its_tools_again_to_the_resuming_client() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message("first")]),
        Turn::new([function_call("t1", "lookup_ticket", r#"{"id":"KEEL-12"}"#)]),
        Turn::new([assistant_message("second")]),
    ]);
    let world = World::new(script, &[]).await?;
    let thread = {
        let mut first = world.server().await?;
        let mut params = world.thread_params();
        params["dynamicTools"] = dynamic_tools();
        let thread = first.start_thread(params).await?;
        let turn = first.start_turn(&thread, "hello").await?;
        first.read_turn_completed(&turn).await?;
        thread
    };
    // A new server process: the tools come back from the thread's file.
    let mut second = world.server().await?;
    second
        .request("thread/resume", json!({"threadId": thread}))
        .await?;
    let turn = second.start_turn(&thread, "look it up").await?;
    let call = second.read_server_request().await?;
    assert_eq!(call["method"], "item/tool/call");
    assert_eq!(call["params"]["tool"], "lookup_ticket");
    second
        .respond(
            call["id"].clone(),
            json!({"contentItems": [{"type": "inputText", "text": "still in review"}], "success": true}),
        )
        .await?;
    let completed = second.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert_eq!(model_saw(&world.mock, "t1"), "still in review");
    let names = world.mock.requests()[1].tool_names();
    assert!(
        names.contains(&"tracker__close_ticket".to_string()),
        "{names:?}"
    );
    Ok(())
}
