//! Sub-agents in `keel acp`, driven by an editor on the official ACP SDK
//! (`tests/fixtures/acp_editor_subagents.mjs`): the session's agent spawns a helper that runs
//! a command needing permission. An editor that offers `subagents` (unstable ACP) is told of
//! the helper on its session (`subagent_update`) before any of the helper's traffic, then sees
//! the helper's tool call and permission request under the helper's own session id; an editor
//! that does not is asked the helper's permission on its own session and sees none of the
//! helper's updates; an editor that offers its terminals runs only its own sessions' commands
//! there (the helper's run in Keel's processes).

use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    CapturedRequest, MockModelServer, Turn, assistant_message, function_call, shell_call,
};
use serde_json::{Value, json};

use super::acp_editor::{editor_command, editor_report};
use super::app_server::common::World;
use crate::suite::agents::input_text;

/// Ample for three agents' turns on a busy machine; the script itself never sleeps.
const WAIT: Duration = Duration::from_secs(120);

/// The parent spawns a helper and waits for it; the helper runs one command, then reports.
fn delegation(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    if text.contains("HELPER-TASK") {
        return Some(if request.tool_output("k1").is_none() {
            Turn::new([shell_call(
                "k1",
                ["bash", "-lc", "touch helper.txt && echo checked-by-helper"],
            )])
        } else {
            Turn::new([assistant_message("helper done")])
        });
    }
    let spawned = request
        .tool_output("s1")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|value| value["agent_id"].as_str().map(str::to_string));
    Some(match spawned {
        None => Turn::new([function_call(
            "s1",
            "spawn_agent",
            json!({"message": "HELPER-TASK: run the check"}).to_string(),
        )]),
        Some(_) if request.tool_output("w1").is_some() => {
            Turn::new([assistant_message("parent done")])
        }
        Some(id) => Turn::new([function_call(
            "w1",
            "wait_agent",
            json!({"ids": [id], "timeout_ms": 60000}).to_string(),
        )]),
    })
}

/// Runs the editor script (`mode`: `subagents` or nothing) against `keel acp`; its report.
async fn run_editor(mode: &str) -> anyhow::Result<(Value, World)> {
    let mock = MockModelServer::builder()
        .responder(delegation)
        .start()
        .await?;
    let world = World::with_mock(mock, &[("approval_policy", toml::Value::from("untrusted"))])?;
    let mut command = editor_command("acp_editor_subagents.mjs", &world)?;
    command.arg(world.ws()).arg(mode);
    let report = editor_report(command, WAIT).await?;
    Ok((report, world))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn an_editor_that_offers_subagents_sees_the_helper_as_a_session() -> anyhow::Result<()> {
    let (report, _world) = run_editor("subagents").await?;
    assert_eq!(report["answer"]["stopReason"], "end_turn", "{report:#}");
    let parent = report["session"]["sessionId"].as_str().context("session")?;
    let updates: Vec<&Value> = report["updates"].as_array().into_iter().flatten().collect();
    let announced = updates
        .iter()
        .position(|n| n["update"]["sessionUpdate"] == "subagent_update")
        .with_context(|| format!("no subagent_update: {updates:#?}"))?;
    let announcement = updates[announced];
    assert_eq!(announcement["sessionId"], parent);
    let helper = announcement["update"]["sessionId"]
        .as_str()
        .context("helper id")?;
    assert_ne!(helper, parent);
    // Nothing of the helper's before its announcement; its command under its own id after.
    let helper_updates: Vec<usize> = updates
        .iter()
        .enumerate()
        .filter(|(_, n)| n["sessionId"] == helper)
        .map(|(at, _)| at)
        .collect();
    assert!(
        helper_updates.iter().all(|at| *at > announced),
        "{updates:#?}"
    );
    assert!(
        updates.iter().any(|n| n["sessionId"] == helper
            && n["update"]["sessionUpdate"] == "tool_call_update"
            && n["update"].to_string().contains("checked-by-helper")),
        "{updates:#?}"
    );
    let asked = &report["permissions"];
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{asked:#}");
    assert_eq!(asked[0]["sessionId"], helper, "{asked:#}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn an_editor_without_subagents_is_asked_on_its_own_session() -> anyhow::Result<()> {
    let (report, _world) = run_editor("").await?;
    assert_eq!(report["answer"]["stopReason"], "end_turn", "{report:#}");
    let parent = report["session"]["sessionId"].as_str().context("session")?;
    let updates: Vec<&Value> = report["updates"].as_array().into_iter().flatten().collect();
    assert!(
        updates.iter().all(|n| n["sessionId"] == parent),
        "an update of another session: {updates:#?}"
    );
    let asked = &report["permissions"];
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{asked:#}");
    assert_eq!(asked[0]["sessionId"], parent, "{asked:#}");
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .is_some_and(|title| title.contains("checked-by-helper")),
        "{asked:#}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn a_helpers_command_never_goes_to_the_editors_terminal() -> anyhow::Result<()> {
    let (report, world) = run_editor("terminal").await?;
    assert_eq!(report["answer"]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(report["terminals"], json!([]), "{report:#}");
    assert!(world.ws().join("helper.txt").exists(), "{report:#}");
    Ok(())
}
