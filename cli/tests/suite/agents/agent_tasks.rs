//! The second generation of sub-agent tools (Codex 0.171's `collaboration` namespace) through
//! `keel exec` with `gpt-6.2-sol`: an agent spawned by task name, its answer arriving in the
//! parent's history by itself, the parent's mailbox, `list_agents`, `send_message` (joins the
//! child's history without a turn), `followup_task` (the child's next turn),
//! `interrupt_agent`, and refusals of bad names and a taken path.

use keel_test_support::{
    CapturedRequest, MockModelServer, Turn, assistant_message, function_call, write_config,
};
use serde_json::{Value, json};

use crate::suite::exec::keel_exec;

/// The whole input of a request, as JSON text (agent messages keep their payload in an
/// `encrypted_content` part, which plain-text helpers skip).
fn input_json(request: &CapturedRequest) -> String {
    serde_json::to_string(request.input()).unwrap_or_default()
}

fn responder(request: &CapturedRequest) -> Option<Turn> {
    let text = input_json(request);
    if text.contains("Task name: /root/worker\\n") {
        let reply = if text.contains("WORK-2") {
            "child done 2"
        } else {
            "child done 1"
        };
        return Some(Turn::new([assistant_message(reply)]));
    }
    let steps: [(&str, &str, Value); 11] = [
        (
            "s1",
            "spawn_agent",
            json!({"task_name": "worker", "message": "WORK-1", "fork_turns": "none"}),
        ),
        ("w1", "wait_agent", json!({"timeout_ms": 60000})),
        ("l1", "list_agents", json!({})),
        (
            "m1",
            "send_message",
            json!({"target": "worker", "message": "NOTE-1"}),
        ),
        (
            "f1",
            "followup_task",
            json!({"target": "/root/worker", "message": "WORK-2"}),
        ),
        ("w2", "wait_agent", json!({"timeout_ms": 60000})),
        ("i1", "interrupt_agent", json!({"target": "worker"})),
        (
            "b1",
            "spawn_agent",
            json!({"task_name": "Bad Name!", "message": "x"}),
        ),
        (
            "d1",
            "spawn_agent",
            json!({"task_name": "worker", "message": "again"}),
        ),
        (
            "x1",
            "send_message",
            json!({"target": "nobody", "message": "x"}),
        ),
        (
            "r1",
            "followup_task",
            json!({"target": "/root", "message": "x"}),
        ),
    ];
    for (call_id, tool, args) in steps {
        if request.tool_output(call_id).is_none() {
            return Some(Turn::new([function_call(call_id, tool, args.to_string())]));
        }
    }
    Some(Turn::new([assistant_message("PARENT DONE")]))
}

/// The output the parent got for `call_id`, as text.
fn output(mock: &MockModelServer, call_id: &str) -> anyhow::Result<String> {
    mock.requests()
        .iter()
        .find_map(|r| {
            r.tool_output(call_id)
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .ok_or_else(|| anyhow::anyhow!("no output for {call_id}"))
}

fn output_json(mock: &MockModelServer, call_id: &str) -> anyhow::Result<Value> {
    Ok(serde_json::from_str(&output(mock, call_id)?)?)
}

fn is_child(request: &CapturedRequest) -> bool {
    input_json(request).contains("Task name: /root/worker\\n")
}

/// The agent messages in a request's input.
fn agent_messages(request: &CapturedRequest) -> Vec<Value> {
    request
        .input()
        .iter()
        .filter(|item| item["type"] == "agent_message")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_spawned_by_task_name_report_message_and_take_follow_ups() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(responder)
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("model", toml::Value::from("gpt-6.2-sol"))],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["delegate"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("PARENT DONE"), "{}", out.stdout);

    // The parent is offered Codex's second-generation tools, and is told who it is.
    let first = &mock.requests()[0];
    let offered = first.input()[0].to_string();
    for tool in [
        "followup_task",
        "interrupt_agent",
        "list_agents",
        "send_message",
    ] {
        assert!(offered.contains(tool), "{tool} offered");
    }
    assert!(
        !offered.contains("\"send_input\""),
        "first generation not offered"
    );
    assert!(input_json(first).contains("<multi_agent_role>You are `/root`"));
    assert!(input_json(first).contains("Proactive delegation is off"));
    assert_eq!(
        output_json(&mock, "s1")?,
        json!({"task_name": "/root/worker"})
    );

    // The child starts with the task only (fork_turns none), as Codex's NEW_TASK agent
    // message, and without the asynchronous user tools.
    let children: Vec<CapturedRequest> = mock.requests().into_iter().filter(is_child).collect();
    assert_eq!(children.len(), 2, "two turns of the child");
    assert!(!input_json(&children[0]).contains("delegate"));
    assert!(
        !children[0].input()[0]
            .to_string()
            .contains("request_user_input_async")
    );
    assert_eq!(
        agent_messages(&children[0]),
        [json!({
            "type": "agent_message",
            "id": agent_messages(&children[0])[0]["id"],
            "author": "/root",
            "recipient": "/root/worker",
            "content": [
                {"type": "input_text", "text": "Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\n"},
                {"type": "encrypted_content", "encrypted_content": "WORK-1"}
            ]
        })]
    );
    let metadata: Value = serde_json::from_str(
        children[0]
            .header("x-codex-turn-metadata")
            .unwrap_or_default(),
    )?;
    assert_eq!(metadata["agent_name"], "/root/worker");
    assert_eq!(metadata["turn_trigger"], "subagent");
    // Who spawned it, as Codex tells the provider: the parent's thread and turn, the tree's
    // session (the cache key too), a fresh history (fork_turns none).
    let parent: Value =
        serde_json::from_str(first.header("x-codex-turn-metadata").unwrap_or_default())?;
    let child = &children[0];
    assert_eq!(child.header("x-openai-subagent"), Some("collab_spawn"));
    assert_eq!(
        child.header("x-codex-parent-thread-id"),
        parent["thread_id"].as_str()
    );
    assert_eq!(child.header("session-id"), parent["thread_id"].as_str());
    assert_ne!(child.header("thread-id"), parent["thread_id"].as_str());
    assert_eq!(
        child.body["prompt_cache_key"],
        first.body["prompt_cache_key"]
    );
    assert_eq!(metadata["parent_thread_id"], parent["thread_id"]);
    assert_eq!(metadata["parent_turn_id"], parent["turn_id"]);
    assert_eq!(metadata["root_turn_id"], parent["turn_id"]);
    assert_eq!(metadata["subagent_kind"], "thread_spawn");
    assert_eq!(metadata["thread_source"], "subagent");
    assert_eq!(metadata["history_initialization"], "new");
    let client_metadata = &child.body["client_metadata"];
    assert_eq!(client_metadata["x-openai-subagent"], "collab_spawn");
    assert_eq!(client_metadata["parent_turn_id"], parent["turn_id"]);

    // The parent's mailbox said something arrived; the answer came into its history.
    assert_eq!(
        output_json(&mock, "w1")?,
        json!({"message": "Wait completed.", "timed_out": false})
    );
    let last_parent = mock
        .requests()
        .into_iter()
        .rfind(|request| !is_child(request))
        .ok_or_else(|| anyhow::anyhow!("no parent request"))?;
    let answers: Vec<Value> = agent_messages(&last_parent)
        .into_iter()
        .map(|message| message["content"][0]["text"].clone())
        .collect();
    assert_eq!(
        answers,
        [
            json!(
                "Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/worker\nPayload:\nchild done 1"
            ),
            json!(
                "Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/worker\nPayload:\nchild done 2"
            ),
        ]
    );

    assert_eq!(
        output_json(&mock, "l1")?,
        json!({"agents": [
            {"agent_name": "/root", "agent_status": "running"},
            {"agent_name": "/root/worker", "agent_status": {"completed": "child done 1"}}
        ]})
    );

    // The message joined the child's history without a turn of its own; the follow-up ran
    // as its second turn, which saw both.
    assert_eq!(output(&mock, "m1")?, "");
    assert_eq!(output(&mock, "f1")?, "");
    let second: Vec<(Value, Value)> = agent_messages(&children[1])
        .into_iter()
        .map(|message| {
            (
                message["content"][0]["text"].clone(),
                message["content"][1].clone(),
            )
        })
        .collect();
    assert_eq!(
        second[1..],
        [
            (
                json!("Message Type: MESSAGE\nTask name: /root/worker\nSender: /root\nPayload:\n"),
                json!({"type": "encrypted_content", "encrypted_content": "NOTE-1"})
            ),
            (
                json!("Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\n"),
                json!({"type": "encrypted_content", "encrypted_content": "WORK-2"})
            ),
        ]
    );
    assert_eq!(
        output_json(&mock, "w2")?,
        json!({"message": "Wait completed.", "timed_out": false})
    );
    assert_eq!(
        output_json(&mock, "i1")?,
        json!({"previous_status": {"completed": "child done 2"}})
    );

    // Refusals, in Codex's words.
    assert_eq!(
        output(&mock, "b1")?,
        "agent_name must use only lowercase letters, digits, and underscores"
    );
    assert_eq!(
        output(&mock, "d1")?,
        "agent path `/root/worker` already exists"
    );
    assert_eq!(
        output(&mock, "x1")?,
        "live agent path `/root/nobody` not found"
    );
    assert_eq!(
        output(&mock, "r1")?,
        "Follow-up tasks can't target the root agent"
    );
    Ok(())
}

/// On the app-server, the second generation shows as Codex 0.171 shows it: `subAgentActivity`
/// items on the caller's thread (started, interacted, interrupted, and completed when the
/// child finishes a turn), `wait_agent` as a `collabAgentToolCall` of tool `wait`, and the
/// child as a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_shows_sub_agent_activity() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            if input_json(request).contains("Task name: /root/worker\\n") {
                return Some(Turn::new([assistant_message("child done")]));
            }
            let steps = [
                (
                    "s1",
                    "spawn_agent",
                    json!({"task_name": "worker", "message": "WORK", "fork_turns": "none"}),
                ),
                ("w1", "wait_agent", json!({"timeout_ms": 60000})),
                (
                    "m1",
                    "send_message",
                    json!({"target": "worker", "message": "NOTE"}),
                ),
                ("i1", "interrupt_agent", json!({"target": "worker"})),
                ("l1", "list_agents", json!({})),
            ];
            let step = steps
                .into_iter()
                .find(|(call_id, _, _)| request.tool_output(call_id).is_none())
                .map_or_else(
                    || assistant_message("PARENT DONE"),
                    |(call_id, tool, args)| function_call(call_id, tool, args.to_string()),
                );
            Some(Turn::new([step]))
        })
        .start()
        .await?;
    let world = crate::suite::app_server::common::World::with_mock(
        mock,
        &[("model", toml::Value::from("gpt-6.2-sol"))],
    )?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "delegate").await?;
    let mut items = Vec::new();
    let mut child_thread = None;
    loop {
        let message = server.read_message().await?;
        let params = &message["params"];
        if message["method"] == "item/completed" && params["threadId"] == thread.as_str() {
            items.push(params["item"].clone());
        }
        if message["method"] == "thread/started" && params["thread"]["id"] != thread.as_str() {
            child_thread = params["thread"]["id"].as_str().map(str::to_string);
        }
        if message["method"] == "turn/completed" && params["turn"]["id"] == turn {
            break;
        }
    }
    let child = child_thread.ok_or_else(|| anyhow::anyhow!("no thread for the child"))?;
    let activity: Vec<Value> = items
        .iter()
        .filter(|item| item["type"] == "subAgentActivity")
        .map(|item| {
            json!([
                item["kind"],
                item["agentPath"],
                item["agentThreadId"] == child.as_str()
            ])
        })
        .collect();
    assert_eq!(
        activity,
        [
            json!(["started", "/root/worker", true]),
            json!(["completed", "/root/worker", true]),
            json!(["interacted", "/root/worker", true]),
            json!(["interrupted", "/root/worker", true]),
        ],
        "{items:#?}"
    );
    let started = items
        .iter()
        .find(|item| item["type"] == "subAgentActivity" && item["kind"] == "started")
        .cloned()
        .unwrap_or_default();
    assert_eq!(started["id"], "s1");
    assert_eq!(started["model"], "gpt-6.2-sol");
    let collab: Vec<&Value> = items
        .iter()
        .filter(|item| item["type"] == "collabAgentToolCall")
        .collect();
    assert_eq!(collab.len(), 1, "only the wait: {collab:#?}");
    assert_eq!(collab[0]["tool"], "wait");
    assert_eq!(collab[0]["status"], "completed");
    Ok(())
}

/// The user steering the turn ends a `wait_agent` early (as Codex's does), and the steered
/// input reaches the model with the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_the_turn_ends_a_wait() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let step = if request.tool_output("w1").is_none() {
                function_call(
                    "w1",
                    "wait_agent",
                    json!({"timeout_ms": 600000}).to_string(),
                )
            } else {
                assistant_message("done waiting")
            };
            Some(Turn::new([step]))
        })
        .start()
        .await?;
    let world = crate::suite::app_server::common::World::with_mock(
        mock,
        &[("model", toml::Value::from("gpt-6.2-sol"))],
    )?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "wait for news").await?;
    server
        .read_until("the wait started", |m| {
            m["method"] == "item/started"
                && m["params"]["item"]["type"] == "collabAgentToolCall"
                && m["params"]["item"]["tool"] == "wait"
        })
        .await?;
    server
        .request(
            "turn/steer",
            json!({"threadId": thread, "expectedTurnId": turn,
                   "input": [{"type": "text", "text": "stop waiting"}]}),
        )
        .await?;
    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    let requests = world.mock.requests();
    let last = requests
        .last()
        .ok_or_else(|| anyhow::anyhow!("no request"))?;
    assert_eq!(
        last.tool_output("w1")
            .and_then(Value::as_str)
            .map(serde_json::from_str::<Value>)
            .transpose()?,
        Some(json!({"message": "Wait interrupted by new input.", "timed_out": false}))
    );
    assert!(input_json(last).contains("stop waiting"));
    Ok(())
}
