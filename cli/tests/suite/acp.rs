//! `keel acp` driven by an editor-like client built on the official ACP SDK
//! (`@agentclientprotocol/sdk` from npm, `tests/fixtures/acp_editor.mjs`): the handshake, a
//! session, a prompt whose command asks permission and runs once allowed (streamed as a tool
//! call with its output, then the answer), a prompt cancelled while its permission request is
//! open (stop reason `cancelled`, the command never run), and an unknown session refused;
//! then a fresh `keel acp` (an editor restarted) lists the session, loads it with the whole
//! conversation replayed as it was shown live (the plan and the usage too), and deletes it.

use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, shell_call,
};
use serde_json::{Value, json};

use super::acp_editor::{editor_command, editor_report};
use super::app_server::common::World;

/// Ample for two turns on a busy machine; the script itself never sleeps.
const WAIT: Duration = Duration::from_secs(120);

/// Runs the editor script (`extra`: its mode) against `keel acp` in `world`; its report.
async fn editor(world: &World, extra: &[&str]) -> anyhow::Result<Value> {
    let mut command = editor_command("acp_editor.mjs", world)?;
    command.arg(world.ws()).args(extra);
    editor_report(command, WAIT).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn an_editor_on_the_official_sdk_runs_a_session_with_permissions_and_a_cancel()
-> anyhow::Result<()> {
    let plan = json!({"explanation": "one step", "plan": [
        {"step": "make the file", "status": "in_progress"},
        {"step": "say so", "status": "pending"},
    ]});
    let mock = MockModelServer::start(Script::new([
        Turn::new([
            function_call("p1", "update_plan", plan.to_string()),
            shell_call(
                "c1",
                ["bash", "-lc", "echo made > made.txt && echo wrote it"],
            ),
        ]),
        Turn::new([assistant_message("The file is made.")]),
        Turn::new([shell_call("c2", ["bash", "-lc", "touch never.txt"])]),
        Turn::new([shell_call("c3", ["bash", "-lc", "touch withdrawn.txt"])]),
    ]))
    .await?;
    // Commands ask first, as an editor user expects; the window makes usage showable.
    let world = World::with_mock(
        mock,
        &[
            ("approval_policy", toml::Value::String("untrusted".into())),
            ("model_context_window", toml::Value::Integer(200_000)),
        ],
    )?;
    let report = editor(&world, &[]).await?;

    // The handshake states what Keel does.
    assert_eq!(report["init"]["protocolVersion"], 1);
    assert_eq!(report["init"]["agentInfo"]["name"], "keel");
    assert_eq!(
        report["init"]["agentCapabilities"]["promptCapabilities"],
        json!({"image": true, "audio": false, "embeddedContext": true})
    );
    let session = report["session"]["sessionId"]
        .as_str()
        .context("session id")?;

    // The first prompt: permission asked for the command, which then ran.
    assert_eq!(report["first"]["stopReason"], "end_turn", "{report:#}");
    let asked = &report["permissions"][0];
    assert_eq!(asked["sessionId"], session);
    assert_eq!(asked["toolCall"]["kind"], "execute");
    assert!(
        asked["toolCall"]["title"]
            .as_str()
            .is_some_and(|title| title.contains("echo made > made.txt")),
        "{asked}"
    );
    let kinds: Vec<&str> = asked["options"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|option| option["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(
        std::fs::read_to_string(world.ws().join("made.txt"))?,
        "made\n"
    );
    let first_count = report["firstUpdates"].as_u64().unwrap_or_default() as usize;
    let updates: Vec<&Value> = report["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .take(first_count)
        .map(|notification| &notification["update"])
        .collect();
    let call = updates
        .iter()
        .find(|update| update["sessionUpdate"] == "tool_call")
        .with_context(|| format!("no tool call: {updates:#?}"))?;
    assert_eq!(call["kind"], "execute");
    let finished = updates
        .iter()
        .find(|update| {
            update["sessionUpdate"] == "tool_call_update" && update["status"] == "completed"
        })
        .with_context(|| format!("no finished tool call: {updates:#?}"))?;
    assert_eq!(finished["toolCallId"], call["toolCallId"]);
    assert!(finished.to_string().contains("wrote it"), "{finished}");
    let answer: String = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(answer, "The file is made.");
    let live_plan = updates
        .iter()
        .find(|update| update["sessionUpdate"] == "plan")
        .with_context(|| format!("no plan: {updates:#?}"))?;
    assert_eq!(
        live_plan["entries"][0],
        json!({"content": "make the file", "priority": "medium", "status": "in_progress"})
    );
    let live_usage = updates
        .iter()
        .rfind(|update| update["sessionUpdate"] == "usage_update")
        .with_context(|| format!("no usage: {updates:#?}"))?;
    assert!(live_usage["used"].as_u64().is_some_and(|used| used > 0));

    // The second prompt: cancelled while its permission request was open.
    assert_eq!(report["second"]["stopReason"], "cancelled", "{report:#}");
    assert_eq!(report["permissions"].as_array().map(Vec::len), Some(3));
    assert!(!world.ws().join("never.txt").exists());

    // A prompt the editor withdraws ($/cancel_request) stops its turn and answers -32800.
    assert_eq!(report["withdrawn"]["code"], -32800, "{report:#}");
    assert!(!world.ws().join("withdrawn.txt").exists());

    // A session that does not exist is refused, naming it.
    assert_eq!(report["unknown"]["code"], -32602, "{report:#}");

    // The pickers: a mode, the model, set and announced; an unknown mode refused.
    let options = report["session"]["configOptions"]
        .as_array()
        .context("config options")?;
    let ids: Vec<&str> = options.iter().filter_map(|o| o["id"].as_str()).collect();
    assert_eq!(ids[..2], ["mode", "model"], "{options:#?}");
    assert_eq!(options[0]["currentValue"], "default");
    assert_eq!(report["session"]["modes"]["currentModeId"], "default");
    assert_eq!(
        report["setMode"]["configOptions"][0]["currentValue"],
        "read-only"
    );
    assert_eq!(
        report["modeUpdates"],
        json!([
            {"sessionUpdate": "current_mode_update", "currentModeId": "read-only"},
            {"sessionUpdate": "current_mode_update", "currentModeId": "default"},
        ])
    );
    assert_eq!(report["badMode"]["code"], -32602, "{report:#}");

    // The editor restarts: a fresh `keel acp` lists the session and replays it as shown.
    let reload = editor(&world, &["reload", session]).await?;
    assert_eq!(reload["init"]["agentCapabilities"]["loadSession"], true);
    let listed = &reload["listed"]["sessions"];
    assert_eq!(listed[0]["sessionId"], session, "{reload:#}");
    assert_eq!(listed[0]["title"], "make the file");
    let replayed: Vec<&Value> = reload["replayed"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|notification| &notification["update"])
        .collect();
    let kinds: Vec<&str> = replayed
        .iter()
        .filter_map(|update| update["sessionUpdate"].as_str())
        .collect();
    assert_eq!(
        kinds[..3],
        ["user_message_chunk", "tool_call", "agent_message_chunk"],
        "{replayed:#?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "make the file");
    let call_again = replayed[1];
    assert_eq!(call_again["toolCallId"], call["toolCallId"]);
    assert_eq!(call_again["kind"], "execute");
    assert_eq!(call_again["title"], call["title"]);
    assert_eq!(call_again["status"], "completed");
    assert_eq!(call_again["content"], finished["content"]);
    assert_eq!(replayed[2]["content"]["text"], "The file is made.");
    // The first turn's plan and usage, as the turn left them on the editor's screen.
    assert_eq!(replayed[3], *live_plan, "{replayed:#?}");
    assert_eq!(replayed[4], *live_usage, "{replayed:#?}");
    assert_eq!(replayed[5]["content"]["text"], "now wait for a long time");
    assert_eq!(
        reload["after"]["sessions"],
        json!([]),
        "deleted: {reload:#}"
    );
    Ok(())
}
