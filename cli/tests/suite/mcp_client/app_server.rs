//! The app-server with MCP servers: `mcpToolCall` items in the reference shape, progress,
//! start-up status, `mcpServerStatus/list`, `mcpServer/resource/read`, `mcpServer/tool/call`, approvals under `on-request`, elicitation, a server
//! that exits mid-call, and an interrupt that cancels a running call.

use std::collections::BTreeSet;

use keel_test_support::{AppServerProcess, Script, Turn, assistant_message, function_call};
use serde_json::{Value, json};

use super::{processes_with, stdio_server, wait_gone};
use crate::suite::app_server::common::{World, reference_item_fields};

const SKIP: &str =
    "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)";

fn assert_reference_shape(item: &Value) -> anyhow::Result<()> {
    let (properties, required) = reference_item_fields("mcpToolCall")?;
    let keys: BTreeSet<String> = item
        .as_object()
        .map(|object| object.keys().cloned().collect())
        .unwrap_or_default();
    assert!(keys.is_subset(&properties), "{keys:?} vs {properties:?}");
    assert!(
        required.is_subset(&keys),
        "{required:?} missing from {item}"
    );
    Ok(())
}

async fn read_item(server: &mut AppServerProcess, method: &str, id: &str) -> anyhow::Result<Value> {
    let message = server
        .read_until(&format!("{method} for {id}"), |m| {
            m["method"] == method && m["params"]["item"]["id"] == id
        })
        .await?;
    Ok(message["params"]["item"].clone())
}

fn config(
    name: &str,
    marker: &str,
    extra: &[(&str, toml::Value)],
) -> anyhow::Result<Vec<(String, toml::Value)>> {
    let mut config = stdio_server(name, marker)?;
    config.extend(extra.iter().map(|(k, v)| ((*k).to_string(), v.clone())));
    Ok(config)
}

async fn world(script: Script, config: Vec<(String, toml::Value)>) -> anyhow::Result<World> {
    let overrides: Vec<(&str, toml::Value)> = config
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    World::new(script, &overrides).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn calls_are_items_with_progress_and_servers_are_listed() -> anyhow::Result<()> {
    let _ = SKIP;
    let marker = format!("keel-mcp-items-{}", std::process::id());
    let script = Script::new([
        Turn::new([function_call(
            "p1",
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}).to_string(),
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let mut config = config("everything", &marker, &[])?;
    config.push((
        "mcp_servers.broken.command".to_string(),
        "/nonexistent/keel-mcp".into(),
    ));
    let world = world(script, config).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "go").await?;

    let started = read_item(&mut server, "item/started", "p1").await?;
    assert_eq!(started["type"], "mcpToolCall");
    assert_eq!(started["status"], "inProgress");
    assert_eq!(started["server"], "everything");
    assert_eq!(started["tool"], "trigger-long-running-operation");
    assert_eq!(started["arguments"], json!({"duration": 1, "steps": 2}));
    // Keel's MCP servers run where the app-server does (Codex 0.171's `environmentId`).
    assert_eq!(started["environmentId"], "local");
    assert_reference_shape(&started)?;
    let progress = server
        .read_notification("item/mcpToolCall/progress")
        .await?;
    assert_eq!(progress["params"]["itemId"], "p1");
    assert_eq!(progress["params"]["turnId"], turn.as_str());
    assert_eq!(progress["params"]["message"], "1/2");
    let completed = read_item(&mut server, "item/completed", "p1").await?;
    assert_eq!(completed["status"], "completed");
    assert!(
        completed["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Long running operation completed"))
    );
    assert!(completed["durationMs"].as_i64().is_some_and(|ms| ms >= 900));
    assert_reference_shape(&completed)?;
    let done = server.read_turn_completed(&turn).await?;
    assert_eq!(done["turn"]["status"], "completed");
    let read = server
        .request(
            "thread/read",
            json!({"threadId": thread, "includeTurns": true}),
        )
        .await?;
    let recorded = read["thread"]["turns"][0]["items"]
        .as_array()
        .and_then(|items| items.iter().find(|item| item["type"] == "mcpToolCall"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(recorded["status"], "completed", "{read}");
    assert_eq!(recorded["id"], "p1");

    let ready = server
        .read_until("everything ready", |m| {
            m["method"] == "mcpServer/startupStatus/updated"
                && m["params"]["name"] == "everything"
                && m["params"]["status"] == "ready"
        })
        .await?;
    assert_eq!(ready["params"]["threadId"], thread.as_str());
    assert_eq!(ready["params"]["environmentId"], "local");
    let failed = server
        .read_until("broken failed", |m| {
            m["method"] == "mcpServer/startupStatus/updated"
                && m["params"]["name"] == "broken"
                && m["params"]["status"] == "failed"
        })
        .await?;
    assert!(
        failed["params"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("/nonexistent/keel-mcp"))
    );

    let listed = server.request("mcpServerStatus/list", json!({})).await?;
    let data = listed["data"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = data.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["broken", "everything"]);
    assert_eq!(data[0]["runtimeStatus"], "failed");
    assert_eq!(data[1]["environmentId"], "local");
    assert!(
        data[0]["toolsError"]
            .as_str()
            .is_some_and(|e| e.contains("could not start"))
    );
    assert_eq!(data[1]["runtimeStatus"], "connected");
    assert_eq!(data[1]["authStatus"], "unsupported");
    assert_eq!(data[1]["tools"]["echo"]["name"], "echo");
    // The reference server offers resources and templates; each listed as it sends them.
    let resources = data[1]["resources"].as_array().cloned().unwrap_or_default();
    assert!(
        !resources.is_empty()
            && resources
                .iter()
                .all(|r| r["uri"].is_string() && r["name"].is_string()),
        "{listed}"
    );
    let templates = data[1]["resourceTemplates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !templates.is_empty() && templates.iter().all(|t| t["uriTemplate"].is_string()),
        "{listed}"
    );
    assert_eq!(data[0]["resources"], json!([]));
    let page = server
        .request("mcpServerStatus/list", json!({"limit": 1}))
        .await?;
    assert_eq!(page["nextCursor"], "broken");
    let rest = server
        .request(
            "mcpServerStatus/list",
            json!({"cursor": "broken", "limit": 1}),
        )
        .await?;
    assert_eq!(rest["data"][0]["name"], "everything");
    assert_eq!(rest["nextCursor"], Value::Null);

    // `mcpServer/resource/read`: a listed resource's contents, and why a read is refused.
    let uri = resources[0]["uri"].as_str().unwrap_or_default().to_string();
    let read = server
        .request(
            "mcpServer/resource/read",
            json!({"server": "everything", "uri": uri}),
        )
        .await?;
    let contents = read["contents"].as_array().cloned().unwrap_or_default();
    assert!(
        !contents.is_empty() && contents.iter().all(|c| c["uri"] == uri.as_str()),
        "{read}"
    );
    let error = crate::suite::app_server::common::request_error(
        &mut server,
        "mcpServer/resource/read",
        json!({"server": "nowhere", "uri": uri}),
    )
    .await?;
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown MCP server `nowhere`")),
        "{error}"
    );

    // `mcpServer/tool/call`: the client calls a tool itself, for a loaded thread.
    let called = server
        .request(
            "mcpServer/tool/call",
            json!({"threadId": thread, "server": "everything", "tool": "echo",
                   "arguments": {"message": "from the client"}}),
        )
        .await?;
    assert!(
        called["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("from the client")),
        "{called}"
    );
    for (params, why) in [
        (
            json!({"threadId": thread, "server": "everything", "tool": "no-such-tool"}),
            "has no tool `no-such-tool`",
        ),
        (
            json!({"threadId": thread, "server": "everything", "tool": "echo", "arguments": [1]}),
            "`arguments` must be an object",
        ),
        (
            json!({"threadId": "01a22199-0000-7000-8000-000000000000", "server": "everything", "tool": "echo"}),
            "is not loaded",
        ),
    ] {
        let error = crate::suite::app_server::common::request_error(
            &mut server,
            "mcpServer/tool/call",
            params,
        )
        .await?;
        assert!(
            error["message"].as_str().is_some_and(|m| m.contains(why)),
            "{why}: {error}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn on_request_asks_before_a_tool_that_is_not_read_only() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-approve-{}", std::process::id());
    let script = Script::new([
        Turn::new([function_call(
            "a1",
            "mcp__everything__toggle-simulated-logging",
            "{}".to_string(),
        )]),
        Turn::new([function_call(
            "a2",
            "mcp__everything__toggle-simulated-logging",
            "{}".to_string(),
        )]),
        Turn::new([function_call(
            "a3",
            "mcp__everything__echo",
            json!({"message": "no question"}).to_string(),
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let world = world(
        script,
        config(
            "everything",
            &marker,
            &[("approval_policy", "on-request".into())],
        )?,
    )
    .await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "go").await?;

    let asked = server.read_server_request().await?;
    assert_eq!(asked["method"], "item/tool/requestUserInput");
    let question = &asked["params"]["questions"][0];
    assert_eq!(question["id"], "mcp_tool_call_approval");
    assert!(
        question["question"]
            .as_str()
            .is_some_and(|q| q.contains("toggle-simulated-logging"))
    );
    let labels: Vec<&str> = question["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["label"].as_str())
        .collect();
    assert_eq!(labels.len(), 3);
    server
        .respond(
            asked["id"].clone(),
            json!({"answers": {"mcp_tool_call_approval": {"answers": [labels[0]]}}}),
        )
        .await?;
    let ran = read_item(&mut server, "item/completed", "a1").await?;
    assert_eq!(ran["status"], "completed", "{ran}");

    let asked = server.read_server_request().await?;
    assert_eq!(asked["params"]["itemId"], "a2");
    server
        .respond(
            asked["id"].clone(),
            json!({"answers": {"mcp_tool_call_approval": {"answers": [labels[2]]}}}),
        )
        .await?;
    let declined = read_item(&mut server, "item/completed", "a2").await?;
    assert_eq!(declined["status"], "failed");
    assert!(
        declined["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("declined"))
    );

    // echo is annotated read-only: no question.
    let echoed = read_item(&mut server, "item/completed", "a3").await?;
    assert_eq!(echoed["status"], "completed");
    let done = server.read_turn_completed(&turn).await?;
    assert_eq!(done["turn"]["status"], "completed");
    let told = world.mock.requests()[2]
        .tool_output("a2")
        .cloned()
        .unwrap_or_default();
    assert!(told.to_string().contains("declined"), "{told}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn an_elicitation_reaches_the_client_and_its_answer_the_server() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-elicit-{}", std::process::id());
    let script = Script::new([
        Turn::new([function_call(
            "e1",
            "mcp__everything__trigger-elicitation-request",
            "{}".to_string(),
        )]),
        Turn::new([assistant_message("done")]),
    ]);
    let world = world(
        script,
        config(
            "everything",
            &marker,
            &[("approval_policy", "never".into())],
        )?,
    )
    .await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "go").await?;
    let asked = server.read_server_request().await?;
    assert_eq!(asked["method"], "mcpServer/elicitation/request");
    let params = &asked["params"];
    assert_eq!(params["threadId"], thread.as_str());
    assert_eq!(params["turnId"], turn.as_str());
    assert_eq!(params["serverName"], "everything");
    assert_eq!(params["mode"], "form");
    assert_eq!(params["environmentId"], "local");
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    server
        .respond(
            asked["id"].clone(),
            json!({"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}),
        )
        .await?;
    let completed = read_item(&mut server, "item/completed", "e1").await?;
    assert_eq!(completed["status"], "completed");
    assert!(
        completed.to_string().contains("Ada Lovelace"),
        "{completed}"
    );
    server.read_turn_completed(&turn).await?;
    let told = world.mock.requests()[1]
        .tool_output("e1")
        .cloned()
        .unwrap_or_default();
    assert!(told.to_string().contains("Ada Lovelace"), "{told}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn an_interrupt_cancels_a_running_call() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-interrupt-{}", std::process::id());
    let script = Script::new([
        Turn::new([function_call(
            "l1",
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 60}).to_string(),
        )]),
        Turn::new([assistant_message("unused")]),
    ]);
    let world = world(script, config("everything", &marker, &[])?).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "go").await?;
    server
        .read_notification("item/mcpToolCall/progress")
        .await?;
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread, "turnId": turn}),
        )
        .await?;
    let ended = read_item(&mut server, "item/completed", "l1").await?;
    assert_eq!(ended["status"], "failed");
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cancelled"))
    );
    let done = server.read_turn_completed(&turn).await?;
    assert_eq!(done["turn"]["status"], "interrupted");
    assert_eq!(
        world.mock.requests().len(),
        1,
        "the model is not asked again"
    );
    // The server is still usable: the thread's next turn can call it.
    assert_eq!(processes_with(&marker), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn a_server_that_exits_mid_call_fails_the_call_not_the_turn() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-dies-{}", std::process::id());
    let script = Script::new([
        Turn::new([function_call(
            "d1",
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 60}).to_string(),
        )]),
        Turn::new([assistant_message("the server died")]),
    ]);
    let world = world(script, config("everything", &marker, &[])?).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "go").await?;
    server
        .read_notification("item/mcpToolCall/progress")
        .await?;
    kill_processes_with(&marker);
    let ended = read_item(&mut server, "item/completed", "d1").await?;
    assert_eq!(ended["status"], "failed");
    assert!(
        ended["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("failed")),
        "{ended}"
    );
    let done = server.read_turn_completed(&turn).await?;
    assert_eq!(done["turn"]["status"], "completed");
    let told = world.mock.requests()[1]
        .tool_output("d1")
        .cloned()
        .unwrap_or_default();
    assert!(told.to_string().contains("everything"), "{told}");
    Ok(())
}

/// SIGKILLs every process whose command line holds `marker`.
fn kill_processes_with(marker: &str) {
    for pid in keel_test_support::processes_whose_cmdline_contains(marker) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn threads_share_one_server_which_stops_when_the_last_is_closed() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-shared-{}", std::process::id());
    let call = || {
        Turn::new([function_call(
            "s1",
            "mcp__everything__echo",
            json!({"message": "x"}).to_string(),
        )])
    };
    let script = Script::new([
        call(),
        Turn::new([assistant_message("one")]),
        call(),
        Turn::new([assistant_message("two")]),
    ]);
    let world = world(script, config("everything", &marker, &[])?).await?;
    let mut server = world.server().await?;
    let first = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&first, "go").await?;
    server.read_turn_completed(&turn).await?;
    let second = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&second, "go").await?;
    server.read_turn_completed(&turn).await?;
    assert_eq!(
        processes_with(&marker),
        1,
        "both threads use one server process"
    );

    for thread in [&first, &second] {
        server
            .request("thread/unsubscribe", json!({"threadId": thread}))
            .await?;
        server
            .read_until("thread/closed", |m| {
                m["method"] == "thread/closed" && m["params"]["threadId"] == thread.as_str()
            })
            .await?;
    }
    wait_gone(&marker, std::time::Duration::from_secs(20)).await?;
    Ok(())
}

/// Every message the recording server received, once `wanted` holds for one of them.
async fn recorded_until(
    log: &std::path::Path,
    wanted: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Value>> {
    let read = async {
        loop {
            let messages: Vec<Value> = std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect();
            if messages.iter().any(&wanted) {
                return messages;
            }
            // The server appends to a file; look again shortly.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), read)
        .await
        .map_err(|_| anyhow::anyhow!("the server never received the awaited message"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_python3), ignore = "needs python3 on PATH")]
async fn an_interrupt_sends_the_server_a_cancellation_for_the_call() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("received.jsonl");
    let script = Script::new([
        Turn::new([function_call("h1", "mcp__recorder__hang", "{}".to_string())]),
        Turn::new([assistant_message("unused")]),
    ]);
    let server_script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mcp_recording_server.py"
    );
    let config = vec![
        (
            "mcp_servers.recorder.command".to_string(),
            toml::Value::from("python3"),
        ),
        (
            "mcp_servers.recorder.args".to_string(),
            toml::Value::Array(vec![server_script.into(), log.display().to_string().into()]),
        ),
    ];
    let world = world(script, config).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "go").await?;
    read_item(&mut server, "item/started", "h1").await?;
    let received = recorded_until(&log, |m| m["method"] == "tools/call").await?;
    let call_id = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .map(|m| m["id"].clone())
        .unwrap_or_default();
    assert_eq!(
        received
            .iter()
            .find(|m| m["method"] == "tools/call")
            .map(|m| m["params"]["name"].clone()),
        Some(json!("hang"))
    );
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread, "turnId": turn}),
        )
        .await?;
    let done = server.read_turn_completed(&turn).await?;
    assert_eq!(done["turn"]["status"], "interrupted");
    let received = recorded_until(&log, |m| m["method"] == "notifications/cancelled").await?;
    let cancelled = received
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .cloned()
        .unwrap_or_default();
    assert_eq!(cancelled["params"]["requestId"], call_id);
    Ok(())
}
