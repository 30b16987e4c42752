//! `keel acp --protocol-v2`: the draft ACP v2 for an editor that asks for it, driven by a
//! client on the official SDK's v2 entry point (`tests/fixtures/acp_editor_v2.mjs`): the
//! handshake in v2's shapes, a prompt answered with its message id and ended by an idle
//! `state_update`, a command's permission asked with a title and the tool call as subject,
//! chunks carrying message ids, a cancelled prompt ending `cancelled`, a typed picker change,
//! and a later editor resuming the session with a replay. Without the flag, and for an
//! editor that asks for v1, Keel speaks v1 (checked over raw stdio, no SDK needed).

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, shell_call,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::acp_editor::{editor_command, editor_report};
use super::app_server::common::World;

/// Ample for a few turns on a busy machine; the script itself never sleeps.
const WAIT: Duration = Duration::from_secs(120);

/// The `session/update` payloads of a report's notifications.
fn updates_of(notifications: &Value) -> Vec<&Value> {
    notifications
        .as_array()
        .into_iter()
        .flatten()
        .map(|notification| &notification["update"])
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn an_editor_on_the_sdks_v2_draft_runs_a_session_and_resumes_it() -> anyhow::Result<()> {
    let plan = json!({"plan": [{"step": "make the file", "status": "in_progress"}]});
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
    ]))
    .await?;
    let world = World::with_mock(
        mock,
        &[
            ("approval_policy", toml::Value::String("untrusted".into())),
            ("model_context_window", toml::Value::Integer(200_000)),
        ],
    )?;
    let mut command = editor_command("acp_editor_v2.mjs", &world)?;
    command.arg(world.ws());
    let report = editor_report(command, WAIT).await?;

    // The handshake in v2's shapes.
    assert_eq!(report["init"]["protocolVersion"], 2, "{report:#}");
    assert_eq!(report["init"]["info"]["name"], "keel");
    assert_eq!(
        report["init"]["capabilities"]["session"]["prompt"],
        json!({"image": {}, "embeddedContext": {}})
    );
    let session = report["session"]["sessionId"]
        .as_str()
        .context("session id")?;
    // The session comes with its pickers (`configId`) and its commands (`type: command`).
    assert_eq!(report["session"]["configOptions"][0]["configId"], "mode");
    assert_eq!(report["session"]["availableCommands"][0]["type"], "command");

    // The first prompt: its message id at once, its permission with a title and the tool
    // call as subject, the command run, the answer in chunks of one message, then idle.
    assert!(report["first"]["messageId"].is_string(), "{report:#}");
    assert_eq!(report["firstEnd"]["stopReason"], "end_turn");
    let asked = &report["permissions"][0];
    assert_eq!(asked["sessionId"], session);
    assert!(
        asked["title"]
            .as_str()
            .is_some_and(|title| title.contains("echo made > made.txt")),
        "{asked}"
    );
    assert_eq!(asked["subject"]["type"], "tool_call");
    assert_eq!(asked["subject"]["toolCall"]["toolCallId"], "c1");
    assert_eq!(
        std::fs::read_to_string(world.ws().join("made.txt"))?,
        "made\n"
    );
    let first_count = report["firstUpdates"].as_u64().unwrap_or_default() as usize;
    let updates = updates_of(&report["updates"]);
    let first: Vec<&Value> = updates.iter().take(first_count).copied().collect();
    let kinds: Vec<&str> = first
        .iter()
        .filter_map(|update| update["sessionUpdate"].as_str())
        .collect();
    // The commands (announced after the answer to `session/new`; the editor waits for them
    // before prompting), then the turn: `running` first.
    assert_eq!(
        kinds[..2],
        ["available_commands_update", "state_update"],
        "{kinds:?}"
    );
    assert_eq!(first[1]["state"], "running", "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"state_update"), "{kinds:?}");
    assert!(
        !kinds.contains(&"tool_call"),
        "v2 has no separate announcement: {kinds:?}"
    );
    let call: Vec<&&Value> = first
        .iter()
        .filter(|update| update["toolCallId"] == "c1")
        .collect();
    assert_eq!(call[0]["sessionUpdate"], "tool_call_update");
    assert_eq!(call[0]["kind"], "execute");
    assert_eq!(
        call.last().map(|update| &update["status"]),
        Some(&json!("completed"))
    );
    let plan = first
        .iter()
        .find(|update| update["sessionUpdate"] == "plan_update")
        .context("no plan")?;
    assert_eq!(plan["plan"]["type"], "items");
    assert_eq!(plan["plan"]["entries"][0]["content"], "make the file");
    let chunks: Vec<&&Value> = first
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .collect();
    let answer: String = chunks
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(answer, "The file is made.");
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["messageId"] == chunks[0]["messageId"]),
        "one message, one id: {chunks:#?}"
    );

    // The second prompt: cancelled while its permission was asked; never run.
    assert_eq!(report["secondEnd"]["stopReason"], "cancelled", "{report:#}");
    assert!(!world.ws().join("never.txt").exists());
    assert_eq!(report["unknown"]["code"], -32602, "{report:#}");
    // A typed picker change.
    assert_eq!(
        report["setMode"]["configOptions"][0]["currentValue"],
        "read-only"
    );

    // A later editor resumes the session with a replay from the start.
    let mut command = editor_command("acp_editor_v2.mjs", &world)?;
    command.arg(world.ws()).args(["reload", session]);
    let reload = editor_report(command, WAIT).await?;
    assert_eq!(
        reload["listed"]["sessions"][0]["sessionId"], session,
        "{reload:#}"
    );
    assert_eq!(reload["resumed"]["configOptions"][0]["configId"], "mode");
    // Everything the editor got (its SDK may settle the answer before it hands over the
    // last notifications sent ahead of it).
    let replayed = updates_of(&reload["all"]);
    let user = replayed
        .iter()
        .find(|update| update["sessionUpdate"] == "user_message_chunk")
        .context("no user message replayed")?;
    assert_eq!(user["content"]["text"], "make the file");
    assert!(user["messageId"].is_string());
    let again = replayed
        .iter()
        .find(|update| update["toolCallId"] == "c1")
        .context("the command was not replayed")?;
    assert_eq!(again["status"], "completed");
    assert_eq!(again["title"], call[0]["title"]);
    // The session's state closes the replay, before the answer (the commands come after it).
    // Live updates held while the session opened (the usage told again on resume) follow the
    // replay.
    let commands = replayed
        .iter()
        .position(|update| update["sessionUpdate"] == "available_commands_update")
        .context("no commands after the answer")?;
    let state = replayed
        .iter()
        .position(|update| update["sessionUpdate"] == "state_update")
        .context("no state in the replay")?;
    let last_replayed = replayed
        .iter()
        .rposition(|update| {
            !matches!(
                update["sessionUpdate"].as_str(),
                Some("state_update" | "available_commands_update" | "usage_update")
            )
        })
        .context("nothing replayed")?;
    assert!(last_replayed < state && state < commands, "{replayed:#?}");
    assert_eq!(replayed[state]["state"], "idle");
    assert!(
        replayed[state].get("stopReason").is_none(),
        "a snapshot, not a new ending"
    );
    Ok(())
}

/// Sends `line` to `keel acp` (with `args`) over its real stdio and returns the answer.
async fn first_answer(world: &World, args: &[&str], line: &str) -> anyhow::Result<Value> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .arg("acp")
        .args(args)
        .env("KEEL_HOME", world.home.path())
        .current_dir(world.ws())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    stdin.write_all(format!("{line}\n").as_bytes()).await?;
    stdin.flush().await?;
    let answer = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .context("no answer")??
        .context("keel acp closed its output")?;
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .context("keel acp did not exit once its input closed")??;
    Ok(serde_json::from_str(&answer)?)
}

/// The draft is only spoken when the flag allows it and the editor asks for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_is_spoken_only_with_the_flag_and_only_to_an_editor_that_asks() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let world = World::with_mock(mock, &[])?;
    let v2_init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{}}}"#;
    let v1_init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"ed","version":"1"}}}"#;

    // No flag: a v2 editor is told v1, in v1's shapes.
    let answer = first_answer(&world, &[], v2_init).await?;
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    assert!(answer["result"]["agentInfo"].is_object(), "{answer}");

    // The flag: a v2 editor gets v2, a v1 editor still v1.
    let answer = first_answer(&world, &["--protocol-v2"], v2_init).await?;
    assert_eq!(answer["result"]["protocolVersion"], 2, "{answer}");
    assert_eq!(answer["result"]["info"]["name"], "keel", "{answer}");
    assert!(answer["result"]["agentCapabilities"].is_null(), "{answer}");
    let answer = first_answer(&world, &["--protocol-v2"], v1_init).await?;
    assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    assert!(
        answer["result"]["agentCapabilities"].is_object(),
        "{answer}"
    );
    Ok(())
}
