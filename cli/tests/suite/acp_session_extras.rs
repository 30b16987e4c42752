//! `keel acp` beyond the core methods, driven by an editor on the official ACP SDK
//! (`tests/fixtures/acp_editor_session_extras.mjs`): the session's slash commands (Keel's and
//! its skills') are offered and a skill typed as one reaches the model as a skill mention;
//! an additional directory is writable by the model's sandboxed command; a legacy SSE MCP
//! server becomes a notice for an editor that shows notices; `_session/steering` feeds a
//! running turn and, with no turn running, asks for a prompt when the editor wants that;
//! `session/fork` copies the conversation into a new session; `/goal` sets a goal pursued in
//! a turn and shows it, `/revert` undoes the last turn.

use std::time::Duration;

use anyhow::Context;
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, shell_call,
};
use serde_json::{Value, json};

use super::acp_editor::{editor_command, editor_report};
use super::app_server::common::World;

/// Ample for four turns on a busy machine; the script itself never sleeps.
const WAIT: Duration = Duration::from_secs(120);

/// Every text the person sent in request `index` to the mock.
fn user_texts(mock: &MockModelServer, index: usize) -> Vec<String> {
    mock.requests()
        .get(index)
        .map(|request| {
            request
                .input()
                .iter()
                .filter(|item| item["role"] == "user")
                .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
                .filter_map(|part| part["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_acp_sdk),
    ignore = "needs KEEL_ACP_SDK: @agentclientprotocol/sdk from npm (.ci/run installs it) and node"
)]
async fn an_editor_gets_commands_notices_steering_fork_and_extra_directories() -> anyhow::Result<()>
{
    // Outside the workspace and the temporary folders: writable only as an extra directory.
    let extra = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))?;
    let extra_dir = std::fs::canonicalize(extra.path())?;
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message("Hello Ada.")]),
        Turn::new([shell_call(
            "c1",
            [
                "bash",
                "-lc",
                &format!("touch {}/ok.txt && echo wrote", extra_dir.display()),
            ],
        )]),
        Turn::new([assistant_message("Done.")]),
        Turn::new([assistant_message("You asked me to greet Ada.")]),
        Turn::new([function_call(
            "g1",
            "update_goal",
            json!({"status": "complete"}).to_string(),
        )]),
        Turn::new([assistant_message("Shipped.")]),
    ]))
    .await?;
    let world = World::with_mock(
        mock,
        &[
            ("approval_policy", toml::Value::from("untrusted")),
            ("sandbox_mode", toml::Value::from("workspace-write")),
        ],
    )?;
    let skill = world.home.path().join("skills/greet");
    std::fs::create_dir_all(&skill)?;
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets someone by name\n---\nSay hello warmly.\n",
    )?;
    let ws = std::fs::canonicalize(world.ws())?;

    let mut command = editor_command("acp_editor_session_extras.mjs", &world)?;
    command.arg(&ws).arg(&extra_dir);
    let report: Value = editor_report(command, WAIT).await?;
    // What `initialize` offers.
    let offered = &report["init"]["agentCapabilities"]["sessionCapabilities"];
    assert_eq!(offered["fork"], json!({}), "{report:#}");
    assert_eq!(offered["additionalDirectories"], json!({}));
    assert_eq!(report["init"]["_meta"]["steering"]["supported"], true);

    let session = report["session"]["sessionId"].as_str().context("session")?;
    let updates: Vec<&Value> = report["updates"].as_array().into_iter().flatten().collect();
    let of_session = |id: &str, kind: &str| -> Vec<Value> {
        updates
            .iter()
            .filter(|n| n["sessionId"] == id && n["update"]["sessionUpdate"] == kind)
            .map(|n| n["update"].clone())
            .collect()
    };

    // The commands: Keel's, then the skill.
    let commands = of_session(session, "available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|command| command["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["compact", "review", "goal", "revert", "greet"],
        "{commands:#?}"
    );
    // The skill typed as a command reached the model as a mention of it.
    assert_eq!(report["skill"]["stopReason"], "end_turn", "{report:#}");
    let first = user_texts(&world.mock, 0);
    assert!(
        first.iter().any(|text| text.trim() == "$greet Ada"),
        "{first:#?}"
    );

    // The legacy SSE server became a notice.
    let notices = of_session(session, "notice");
    assert!(
        notices.iter().any(|notice| notice["severity"] == "warning"
            && notice["title"]
                .as_str()
                .is_some_and(|title| title.contains("legacy"))),
        "{notices:#?}"
    );

    // The extra directory was writable by the sandboxed command.
    assert_eq!(report["write"]["stopReason"], "end_turn", "{report:#}");
    assert!(extra_dir.join("ok.txt").exists(), "{report:#}");

    // Steering while the turn waited reached its next model request; with no turn running
    // and the editor asking for it, a prompt is required.
    assert_eq!(report["steered"], json!([{"outcome": "injected"}]));
    let steered_request = user_texts(&world.mock, 2);
    assert!(
        steered_request
            .iter()
            .any(|text| text.contains("also mind the tests")),
        "{steered_request:#?}"
    );
    assert_eq!(
        report["idle"],
        json!({"outcome": "promptRequired", "reason": "noRunningTurn"})
    );

    // The fork is a new session holding the conversation.
    let fork = report["fork"]["sessionId"].as_str().context("fork")?;
    assert_ne!(fork, session);
    assert_eq!(report["forked"]["stopReason"], "end_turn", "{report:#}");
    let forked_request = user_texts(&world.mock, 3);
    assert!(
        forked_request
            .iter()
            .any(|text| text.trim() == "$greet Ada")
            && forked_request
                .iter()
                .any(|text| text == "what did I ask first?"),
        "{forked_request:#?}"
    );
    let listed: Vec<&str> = report["listed"]["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|info| info["sessionId"].as_str())
        .collect();
    assert!(
        listed.contains(&session) && listed.contains(&fork),
        "{listed:?}"
    );

    // `/goal <objective>` sets the goal and the prompt waits for the turn that pursues it;
    // `/goal` shows it; `/revert` undoes the last turn.
    assert_eq!(report["goal"]["stopReason"], "end_turn", "{report:#}");
    assert_eq!(report["goalShown"]["stopReason"], "end_turn");
    assert_eq!(report["reverted"]["stopReason"], "end_turn");
    let said: Vec<String> = of_session(session, "agent_message_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str().map(str::to_string))
        .collect();
    let said = said.concat();
    assert!(said.contains("Shipped."), "{said}");
    assert!(said.contains("Goal (complete): ship the release"), "{said}");
    assert!(said.contains("Reverted the last turn"), "{said}");
    Ok(())
}
