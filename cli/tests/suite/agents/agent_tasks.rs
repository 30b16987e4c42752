//! The second generation of sub-agent tools (Codex 0.171's `collaboration` namespace) through
//! `keel exec` with `gpt-6.2-sol`: an agent spawned by task name, its answer arriving in the
//! parent's history by itself, the parent's mailbox, `list_agents`, `send_message` (joins the
//! child's history without a turn), `followup_task` (the child's next turn),
//! `interrupt_agent`, and refusals of bad names and a taken path.

use keel_test_support::{
    CapturedRequest, MockModelServer, Turn, assistant_message, function_call, write_config,
};
use serde_json::{Value, json};

use super::input_text;
use crate::suite::exec::keel_exec;

/// The text `spawn_agent` puts first in a child's task.
const CHILD_MARK: &str = "You are the agent `/root/worker`";

fn responder(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    if text.contains(CHILD_MARK) {
        let reply = if text.contains("WORK-2") {
            "child done 2"
        } else {
            "child done 1"
        };
        return Some(Turn::new([assistant_message(reply)]));
    }
    let steps: [(&str, &str, Value); 9] = [
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
    ];
    for (call_id, tool, args) in steps {
        if request.tool_output(call_id).is_none() {
            return Some(Turn::new([function_call(call_id, tool, args.to_string())]));
        }
    }
    Some(Turn::new([assistant_message("PARENT DONE")]))
}

/// The JSON output the parent got for `call_id`.
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

fn is_child(request: &CapturedRequest) -> bool {
    input_text(request).contains(CHILD_MARK)
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
    assert!(input_text(first).contains("<multi_agent_role>You are `/root`"));
    assert!(input_text(first).contains("Proactive delegation is off"));

    let spawned = output(&mock, "s1")?;
    assert_eq!(spawned["task_name"], "/root/worker");

    // The child starts with its name and the task only (fork_turns none), as /root/worker.
    let children: Vec<CapturedRequest> = mock.requests().into_iter().filter(is_child).collect();
    assert_eq!(children.len(), 2, "two turns of the child");
    let child_first = input_text(&children[0]);
    assert!(child_first.contains("WORK-1") && !child_first.contains("delegate"));
    let metadata: Value = serde_json::from_str(
        children[0]
            .header("x-codex-turn-metadata")
            .unwrap_or_default(),
    )?;
    assert_eq!(metadata["agent_name"], "/root/worker");
    assert_eq!(metadata["turn_trigger"], "subagent");

    // The parent's mailbox said who finished; the answer itself came into its history.
    let waited = output(&mock, "w1")?;
    assert_eq!(waited["timed_out"], false);
    assert_eq!(
        waited["updates"][0],
        json!({"from": "/root/worker", "kind": "completed"})
    );
    let last_parent = mock
        .requests()
        .into_iter()
        .rfind(|request| !is_child(request))
        .ok_or_else(|| anyhow::anyhow!("no parent request"))?;
    let parent_text = input_text(&last_parent);
    assert!(
        parent_text
            .contains("<agent_update from=\"/root/worker\" status=\"completed\">\nchild done 1"),
        "{parent_text}"
    );
    assert!(parent_text.contains("child done 2"), "{parent_text}");

    let listed = output(&mock, "l1")?;
    let paths: Vec<&str> = listed["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|agent| agent["task_name"].as_str())
        .collect();
    assert_eq!(paths, ["/root", "/root/worker"]);

    // The message joined the child's history without a turn of its own; the follow-up ran
    // as its second turn, which saw both.
    assert_eq!(output(&mock, "m1")?["delivered_to"], "/root/worker");
    let child_second = input_text(&children[1]);
    assert!(
        child_second.contains("<agent_message from=\"/root\">\nNOTE-1")
            && child_second.contains("WORK-2"),
        "{child_second}"
    );
    assert_eq!(output(&mock, "w2")?["updates"][0]["from"], "/root/worker");
    assert_eq!(
        output(&mock, "i1")?["previous_status"]["status"],
        "completed"
    );

    let bad = output(&mock, "b1")?;
    assert!(
        bad["error"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid task_name `Bad Name!`"),
        "{bad}"
    );
    let taken = output(&mock, "d1")?;
    assert!(
        taken["error"]
            .as_str()
            .unwrap_or_default()
            .contains("`/root/worker` is already running"),
        "{taken}"
    );
    Ok(())
}
