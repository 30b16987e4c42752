//! The Codex 0.171 TUI's view of a thread's agents and of the other threads, on `keel
//! app-server`: the agents it cycles through (Alt+←/→) are the ones this thread spawned, and
//! nothing else the home holds (before thread lineage, Keel answered its `ancestorThreadId`
//! question with every stored thread); `resume --last` picks an interactive thread, and the
//! agent command center lists the top-level threads, never a sub-agent.

use keel_test_support::{
    CapturedRequest, JsonLinesProcess, MockModelServer, Turn, assistant_message, function_call,
};
use serde_json::Value;

use super::app_server::common::World;
use super::codex_tui::{TuiPane, codex_binary};

/// The text of a request's input messages.
fn input_text(request: &CapturedRequest) -> String {
    request
        .input()
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Titles for the TUI's title turns; a parent that spawns a sub-agent and waits for it; a
/// plain answer to anything else.
fn responder(request: &CapturedRequest) -> Option<Turn> {
    if request.body["text"]["format"]["type"] == "json_schema" {
        return Some(Turn::new([assistant_message(
            r#"{"title": "Delegating session"}"#,
        )]));
    }
    let text = input_text(request);
    let spawned = request
        .tool_output("s1")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| v["agent_id"].as_str().map(str::to_string));
    Some(if text.contains("CHILD-TASK") {
        Turn::new([assistant_message("child done")])
    } else if text.contains("KEEL-SPAWN") {
        match spawned {
            None if request.tool_output("s1").is_some() => {
                Turn::new([assistant_message("could not spawn")])
            }
            None => Turn::new([function_call(
                "s1",
                "spawn_agent",
                serde_json::json!({"message": "CHILD-TASK: look around"}).to_string(),
            )]),
            Some(id) if request.tool_output("w1").is_none() => Turn::new([function_call(
                "w1",
                "wait_agent",
                serde_json::json!({"ids": [id], "timeout_ms": 60000}).to_string(),
            )]),
            Some(_) => Turn::new([assistant_message("parent done")]),
        }
    } else {
        Turn::new([assistant_message("plain answer")])
    })
}

async fn keel_on_websocket() -> anyhow::Result<(World, JsonLinesProcess, String)> {
    let mock = MockModelServer::builder()
        .responder(responder)
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let mut server = world
        .builder()
        .arg("--listen")
        .arg("ws://127.0.0.1:0")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    Ok((world, server, url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_shows_only_this_threads_agents_and_interactive_threads() -> anyhow::Result<()>
{
    let codex = codex_binary()?;
    let (world, _server, url) = keel_on_websocket().await?;
    // A `keel exec` run in the same home: not interactive, nobody's agent.
    let out = super::exec::keel_exec(
        world.home.path(),
        world.ws(),
        &["KEEL-EXEC-RUN hello"],
        None,
    )
    .await?;
    anyhow::ensure!(out.code == Some(0), "{}", out.stderr);

    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;
    tui.type_line("KEEL-SPAWN delegate this").await?;
    tui.wait_for("parent done").await?;
    tui.wait_for("Worked for").await?;
    tui.quit().await?;
    drop(tui);

    // A new TUI: `resume --last` picks the spawning thread (not its newer sub-agent, not the
    // exec run), and learns its agents from `thread/list` alone.
    let resumed = TuiPane::start(&codex, &["resume", "--last"], &url, world.ws())?;
    resumed.wait_for("parent done").await?;
    resumed.wait_for("Main [default]").await?;
    resumed.keys(&["M-Right"])?;
    let child = resumed.wait_for("CHILD-TASK: look around").await?;
    assert!(!child.contains("KEEL-EXEC-RUN"), "{child}");
    // One agent: the next step of the cycle is the main thread again.
    resumed.keys(&["M-Right"])?;
    let back = resumed.wait_for("Main [default]").await?;
    assert!(
        back.contains("parent done") && !back.contains("KEEL-EXEC-RUN"),
        "{back}"
    );

    // The agent command center (← on an empty composer) lists the home's top-level threads —
    // interactive ones and, as Codex's asks for them too, `exec` runs — never a sub-agent.
    resumed.keys(&["Left"])?;
    resumed.wait_for("Agent command center").await?;
    let center = resumed.wait_for("All 2").await?;
    assert!(
        center.contains("Delegating session") && center.contains("KEEL-EXEC-RUN hello"),
        "{center}"
    );
    assert!(!center.contains("CHILD-TASK"), "{center}");
    resumed.keys(&["Escape"])?;
    resumed.wait_for("Ask Codex to do anything").await?;
    resumed.quit().await?;
    Ok(())
}
