//! The sub-agent tools round trip on `keel app-server`: spawn → wait → send_input → wait →
//! close → resume → send_input → wait; the sub-agent is a thread of its own and each call
//! is a `collabAgentToolCall` item with the reference schema's fields.

use std::collections::BTreeSet;

use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message, function_call};
use serde_json::{Value, json};

use super::input_text;
use crate::suite::app_server::common::{
    World, methods, reference_item_fields, until_turn_completed,
};

/// The agent id in `spawn_agent`'s output.
fn spawned_id(request: &CapturedRequest) -> String {
    request
        .tool_output("s1")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| v["agent_id"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The parent makes the calls in order; the child answers by what it was last told.
fn responder(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    if text.contains("CHILD-TASK") {
        let reply = if text.contains("AGAIN") {
            "child: again"
        } else if text.contains("FOLLOW-UP") {
            "child: follow-up done"
        } else {
            "child: hello"
        };
        return Some(Turn::new([assistant_message(reply)]));
    }
    let id = spawned_id(request);
    let steps: [(&str, &str, Value); 8] = [
        (
            "s1",
            "spawn_agent",
            json!({"message": "CHILD-TASK: say hello"}),
        ),
        (
            "w1",
            "wait_agent",
            json!({"ids": [id], "timeout_ms": 30000}),
        ),
        (
            "i1",
            "send_input",
            json!({"id": id, "message": "FOLLOW-UP"}),
        ),
        ("w2", "wait_agent", json!({"ids": [id]})),
        ("c1", "close_agent", json!({"id": id})),
        ("r1", "resume_agent", json!({"id": id})),
        ("i2", "send_input", json!({"id": id, "message": "AGAIN"})),
        ("w3", "wait_agent", json!({"ids": [id]})),
    ];
    for (call_id, tool, args) in steps {
        if request.tool_output(call_id).is_none() {
            return Some(Turn::new([function_call(call_id, tool, args.to_string())]));
        }
    }
    Some(Turn::new([assistant_message("PARENT DONE")]))
}

fn output(mock: &MockModelServer, call_id: &str) -> anyhow::Result<Value> {
    let text = mock
        .requests()
        .iter()
        .find_map(|r| {
            r.tool_output(call_id)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .ok_or_else(|| anyhow::anyhow!("no output for {call_id}"))?;
    Ok(serde_json::from_str(&text)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_wait_send_close_resume_round_trip_on_the_app_server() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(responder)
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    keel_test_support::write_config(home.path(), &mock.uri(), [("agents.max_threads", 2)])?;
    let world = World {
        mock,
        home,
        workspace,
    };
    let mut server = world.server().await?;
    let parent = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&parent, "delegate").await?;
    let messages = until_turn_completed(&mut server, &turn).await?;
    let mock = &world.mock;

    let w1 = output(mock, "w1")?;
    let child = spawned_id(
        mock.requests()
            .iter()
            .find(|r| r.tool_output("s1").is_some())
            .ok_or_else(|| anyhow::anyhow!("no spawn output"))?,
    );
    assert!(!child.is_empty());
    assert_eq!(w1["timed_out"], false, "{w1}");
    assert_eq!(w1["status"][&child]["status"], "completed", "{w1}");
    assert_eq!(w1["status"][&child]["message"], "child: hello", "{w1}");
    let w2 = output(mock, "w2")?;
    assert_eq!(
        w2["status"][&child]["message"], "child: follow-up done",
        "{w2}"
    );
    let c1 = output(mock, "c1")?;
    assert_eq!(c1["previous_status"]["status"], "completed", "{c1}");
    let r1 = output(mock, "r1")?;
    assert_eq!(r1["agent_id"], child.as_str(), "{r1}");
    let w3 = output(mock, "w3")?;
    assert_eq!(w3["status"][&child]["message"], "child: again", "{w3}");
    // The resumed child kept its history.
    let again = mock
        .requests()
        .into_iter()
        .find(|r| input_text(r).contains("AGAIN"))
        .ok_or_else(|| anyhow::anyhow!("no request after resume"))?;
    assert!(input_text(&again).contains("FOLLOW-UP"));

    // The child is a thread of its own, announced with its parent.
    let started: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m["method"] == "thread/started" && m["params"]["thread"]["id"] == child.as_str()
        })
        .collect();
    assert_eq!(
        started.len(),
        2,
        "spawned and resumed: {:?}",
        methods(&messages)
    );
    assert_eq!(
        started[0]["params"]["thread"]["source"],
        json!({"subAgent": {"thread_spawn": {
            "parent_thread_id": parent, "depth": 1, "agent_nickname": null,
            "agent_path": "/root/agent_1", "agent_role": null
        }}})
    );
    // Its events carry its own thread id.
    assert!(messages.iter().any(|m| {
        m["method"] == "item/completed"
            && m["params"]["threadId"] == child.as_str()
            && m["params"]["item"]["text"] == "child: hello"
    }));

    // Each call is a collabAgentToolCall item with the reference fields.
    let (properties, required) = reference_item_fields("collabAgentToolCall")?;
    let items: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m["method"] == "item/completed"
                && m["params"]["threadId"] == parent.as_str()
                && m["params"]["item"]["type"] == "collabAgentToolCall"
        })
        .map(|m| &m["params"]["item"])
        .collect();
    let tools: Vec<&str> = items.iter().filter_map(|i| i["tool"].as_str()).collect();
    assert_eq!(
        tools,
        [
            "spawnAgent",
            "wait",
            "sendInput",
            "wait",
            "closeAgent",
            "resumeAgent",
            "sendInput",
            "wait"
        ]
    );
    for item in &items {
        let keys: BTreeSet<String> = item
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        assert!(keys.is_subset(&properties), "{keys:?} vs {properties:?}");
        assert!(
            required.is_subset(&keys),
            "{keys:?} lacks some of {required:?}"
        );
        assert_eq!(item["status"], "completed", "{item}");
        assert_eq!(item["senderThreadId"], parent.as_str());
        assert_eq!(item["receiverThreadIds"], json!([child]), "{item}");
    }
    assert_eq!(items[0]["prompt"], "CHILD-TASK: say hello");
    assert_eq!(items[1]["agentsStates"][&child]["status"], "completed");
    assert!(
        messages.iter().any(
            |m| m["method"] == "item/completed" && m["params"]["item"]["text"] == "PARENT DONE"
        )
    );
    world.mock.verify()?;
    Ok(())
}

/// A sub-agent still mid-turn, with a running process, when the main turn completes:
/// `keel exec` ends on its own turn and takes the sub-agent and its processes down with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_exec_exits_on_its_own_turn_and_leaves_no_sub_agent_process() -> anyhow::Result<()> {
    let ws = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let sleeper = keel_test_support::MarkedSleeper::new(ws.path(), "subagent-left")?;
    let command = sleeper.nested_command(60);
    let mock = MockModelServer::builder()
        .responder(move |request| {
            let text = input_text(request);
            if text.contains("CHILD-TASK") {
                return Some(if request.tool_output("x1").is_none() {
                    Turn::new([keel_test_support::exec_command_call(
                        "x1",
                        json!({"cmd": command, "yield_time_ms": 500}),
                    )])
                } else {
                    // Still streaming when the parent gives up waiting.
                    Turn::new([assistant_message("child: server started")])
                        .with_event_delay(std::time::Duration::from_secs(60))
                });
            }
            let id = spawned_id(request);
            Some(if request.tool_output("s1").is_none() {
                Turn::new([function_call(
                    "s1",
                    "spawn_agent",
                    json!({"message": "CHILD-TASK: start a server"}).to_string(),
                )])
            } else if request.tool_output("w1").is_none() {
                Turn::new([function_call(
                    "w1",
                    "wait_agent",
                    json!({"ids": [id], "timeout_ms": 1500}).to_string(),
                )])
            } else {
                Turn::new([assistant_message("PARENT DONE")])
            })
        })
        .start()
        .await?;
    keel_test_support::write_config(home.path(), &mock.uri(), [("agents.max_threads", 2)])?;
    let out = crate::suite::exec::keel_exec(home.path(), ws.path(), &["delegate"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "PARENT DONE\n");
    let waited = output(&mock, "w1")?;
    assert_eq!(waited["timed_out"], true, "{waited}");
    assert!(waited.to_string().contains("running"), "{waited}");
    // The child's process was running when its turn ended; it is gone with keel exec.
    let started = mock
        .requests()
        .iter()
        .find_map(|r| {
            r.tool_output("x1")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default();
    assert!(
        started.contains("Process running with session ID"),
        "{started}"
    );
    sleeper
        .wait_until_gone(std::time::Duration::from_secs(15))
        .await?;
    Ok(())
}

/// A command a sub-agent wants approved is asked of the client on the sub-agent's thread,
/// and the answer goes back to that sub-agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_approval_reaches_the_client_with_its_thread_id() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let text = input_text(request);
            if text.contains("CHILD-TASK") {
                return Some(if request.tool_output("t1").is_none() {
                    Turn::new([keel_test_support::shell_call("t1", ["touch", "child.txt"])])
                } else {
                    Turn::new([assistant_message("child: touched")])
                });
            }
            let id = spawned_id(request);
            Some(if request.tool_output("s1").is_none() {
                Turn::new([function_call(
                    "s1",
                    "spawn_agent",
                    json!({"message": "CHILD-TASK: touch a file"}).to_string(),
                )])
            } else if request.tool_output("w1").is_none() {
                Turn::new([function_call(
                    "w1",
                    "wait_agent",
                    json!({"ids": [id], "timeout_ms": 60000}).to_string(),
                )])
            } else {
                Turn::new([assistant_message("PARENT DONE")])
            })
        })
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    keel_test_support::write_config(home.path(), &mock.uri(), [("approval_policy", "untrusted")])?;
    let world = World {
        mock,
        home,
        workspace,
    };
    let mut server = world.server().await?;
    let parent = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&parent, "delegate").await?;
    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/commandExecution/requestApproval");
    let child_thread = request["params"]["threadId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        !child_thread.is_empty() && child_thread != parent,
        "{request}"
    );
    server
        .respond(request["id"].clone(), json!({"decision": "accept"}))
        .await?;
    let messages = until_turn_completed(&mut server, &turn).await?;
    assert!(world.ws_file("child.txt").exists());
    let waited = output(&world.mock, "w1")?;
    assert_eq!(
        waited["status"][&child_thread]["message"], "child: touched",
        "{waited}"
    );
    assert!(messages.iter().any(|m| {
        m["method"] == "item/completed" && m["params"]["item"]["text"] == "PARENT DONE"
    }));
    Ok(())
}

/// The MCP server forwards a sub-agent's events as `codex/event` with the sub-agent's
/// thread id, under the `tools/call` that runs its parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_server_forwards_sub_agent_events() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            if input_text(request).contains("CHILD-TASK") {
                return Some(Turn::new([assistant_message("child: hello")]));
            }
            let id = spawned_id(request);
            Some(if request.tool_output("s1").is_none() {
                Turn::new([function_call(
                    "s1",
                    "spawn_agent",
                    json!({"message": "CHILD-TASK: say hello"}).to_string(),
                )])
            } else if request.tool_output("w1").is_none() {
                Turn::new([function_call(
                    "w1",
                    "wait_agent",
                    json!({"ids": [id]}).to_string(),
                )])
            } else {
                Turn::new([assistant_message("PARENT DONE")])
            })
        })
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    keel_test_support::write_config(home.path(), &mock.uri(), [("agents.max_threads", 2)])?;
    let mut mcp = keel_test_support::McpProcess::spawn(
        keel_test_support::ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("mcp-server")
            .home_path(home.path())
            .home_var("KEEL_HOME")
            .cwd(ws.path())
            .env_remove("RUST_LOG"),
    )?;
    mcp.initialize().await?;
    let id = mcp
        .send_tool_call("codex", json!({"prompt": "delegate", "cwd": ws.path()}))
        .await?;
    let mut events = Vec::new();
    let result = loop {
        let message = mcp.read_message().await?;
        if message["id"] == id {
            break message;
        }
        if message["method"] == "codex/event" {
            events.push(message["params"].clone());
        }
    };
    assert_eq!(
        result["result"]["structuredContent"]["content"], "PARENT DONE",
        "{result}"
    );
    let parent = result["result"]["structuredContent"]["threadId"].clone();
    let child_message = events
        .iter()
        .find(|e| e["msg"]["type"] == "agent_message" && e["msg"]["message"] == "child: hello")
        .ok_or_else(|| anyhow::anyhow!("no child agent_message among {} events", events.len()))?;
    assert_eq!(child_message["_meta"]["requestId"], id);
    assert!(
        child_message["_meta"]["threadId"].is_string()
            && child_message["_meta"]["threadId"] != parent,
        "{child_message}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["msg"]["type"] == "collab_tool_call_end"
                && e["_meta"]["threadId"] == parent
                && e["msg"]["tool"] == "spawnAgent")
    );
    Ok(())
}

/// `send_input` with `interrupt: true` stops the sub-agent's current work and the new
/// message starts a turn of its own (it is not lost with the interrupted one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_input_with_interrupt_starts_the_new_message() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let text = input_text(request);
            if text.contains("CHILD-TASK") {
                return Some(if text.contains("NEW-TASK") {
                    Turn::new([assistant_message("child: new task done")])
                } else {
                    // The first task streams for a minute: it is interrupted long before.
                    Turn::new([assistant_message("child: slow")])
                        .with_event_delay(std::time::Duration::from_secs(60))
                });
            }
            let id = spawned_id(request);
            let steps: [(&str, &str, Value); 3] = [
                ("s1", "spawn_agent", json!({"message": "CHILD-TASK: slow"})),
                (
                    "i1",
                    "send_input",
                    json!({"id": id, "message": "NEW-TASK", "interrupt": true}),
                ),
                (
                    "w1",
                    "wait_agent",
                    json!({"ids": [id], "timeout_ms": 30000}),
                ),
            ];
            for (call_id, tool, args) in steps {
                if request.tool_output(call_id).is_none() {
                    return Some(Turn::new([function_call(call_id, tool, args.to_string())]));
                }
            }
            Some(Turn::new([assistant_message("PARENT DONE")]))
        })
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    keel_test_support::write_config(home.path(), &mock.uri(), [("agents.max_threads", 2)])?;
    let out = crate::suite::exec::keel_exec(home.path(), ws.path(), &["delegate"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let waited = output(&mock, "w1")?;
    let child = spawned_id(
        mock.requests()
            .iter()
            .find(|r| r.tool_output("s1").is_some())
            .ok_or_else(|| anyhow::anyhow!("no spawn output"))?,
    );
    assert_eq!(
        waited["status"][&child]["message"], "child: new task done",
        "{waited}"
    );
    Ok(())
}
