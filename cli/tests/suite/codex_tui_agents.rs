//! The Codex 0.171 TUI's view of a thread's agents and of the other threads, on `keel
//! app-server`: Alt+←/→ on an empty composer cycles the main view through the thread and the
//! agents it spawned — and nothing else the home holds (before thread lineage, Keel answered the
//! TUI's `ancestorThreadId` question with every stored thread, so an unrelated session and a
//! `keel exec` run showed up as this thread's agents); the agent command center (← on an empty
//! composer) lists the home's top-level threads and never a sub-agent.

use keel_test_support::{
    CapturedRequest, JsonLinesProcess, MockModelServer, Turn, assistant_message, function_call,
};
use serde_json::{Value, json};

use super::app_server::common::World;
use super::codex_tui::{TuiPane, codex_binary, input_text, poll_until};

/// Title turns get a title naming the session (their input quotes the user's prompt); the
/// sub-agent answers; the delegating prompt spawns it, waits for it and finishes; the unrelated
/// prompt (and the `keel exec` run) get a plain answer.
fn responder(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    if request.body["text"]["format"]["type"] == "json_schema" {
        let title = if text.contains("KEEL-SPAWN") {
            "Delegating session"
        } else {
            "Unrelated chore"
        };
        return Some(Turn::new([assistant_message(format!(
            r#"{{"title": "{title}"}}"#
        ))]));
    }
    // The sub-agent's own request first: it holds only the task it was given.
    if text.contains("CHILD-TASK") {
        return Some(Turn::new([assistant_message("child done")]));
    }
    if !text.contains("KEEL-SPAWN") {
        return Some(Turn::new([assistant_message("plain answer")]));
    }
    let spawned = request
        .tool_output("s1")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| v["agent_id"].as_str().map(str::to_string));
    Some(match spawned {
        None if request.tool_output("s1").is_some() => {
            Turn::new([assistant_message("could not spawn")])
        }
        None => Turn::new([function_call(
            "s1",
            "spawn_agent",
            json!({"message": "CHILD-TASK: look around"}).to_string(),
        )]),
        Some(id) if request.tool_output("w1").is_none() => Turn::new([function_call(
            "w1",
            "wait_agent",
            json!({"ids": [id], "timeout_ms": 60000}).to_string(),
        )]),
        Some(_) => Turn::new([assistant_message("parent done")]),
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

/// What the main view shows for the sub-agent (its own transcript; the parent's only quotes the
/// task as `└ CHILD-TASK: look around`), and for the parent once it has an agent (its footer).
const CHILD_VIEW: &str = "› CHILD-TASK: look around";
const MAIN_VIEW: &str = "Main [default]";
/// What the main view would show if another thread of the home were taken for an agent.
const STRANGERS: [&str; 2] = ["KEEL-UNRELATED", "KEEL-EXEC-RUN"];

/// Presses Alt+→ until the view showing `leaving` is replaced (a key sent while the TUI is busy
/// can be lost, so each press gets a few seconds before it is sent again), then waits for the
/// next view of the cycle and fails if it is any thread but `expected`.
async fn next_agent(tui: &TuiPane, leaving: &str, expected: &str) -> anyhow::Result<String> {
    let mut polls = 0;
    poll_until(|| {
        // Every 5 s (50 polls of 100 ms) without a change, press again.
        if polls % 50 == 0 {
            let _ = tui.keys(&["M-Right"]);
        }
        polls += 1;
        (!tui.screen().contains(leaving)).then_some(())
    })
    .await
    .map_err(|_| anyhow::anyhow!("Alt+→ never left {leaving:?}:\n{}", tui.screen()))?;
    let screen = poll_until(|| {
        let screen = tui.screen();
        (screen.contains(expected) || STRANGERS.iter().any(|s| screen.contains(s)))
            .then_some(screen)
    })
    .await
    .map_err(|_| anyhow::anyhow!("Alt+→ never showed {expected:?}:\n{}", tui.screen()))?;
    anyhow::ensure!(
        !STRANGERS.iter().any(|s| screen.contains(s)),
        "another thread of the home was shown as this thread's agent:\n{screen}"
    );
    Ok(screen)
}

/// From the parent: Alt+→ shows the sub-agent, and Alt+→ again the parent — one agent, and no
/// other thread in the cycle.
async fn only_the_spawned_agent(tui: &TuiPane) -> anyhow::Result<()> {
    tui.wait_for(MAIN_VIEW).await?;
    let child = next_agent(tui, MAIN_VIEW, CHILD_VIEW).await?;
    assert!(child.contains("child done"), "{child}");
    let back = next_agent(tui, CHILD_VIEW, MAIN_VIEW).await?;
    assert!(back.contains("parent done"), "{back}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_shows_only_this_threads_agents_and_top_level_threads() -> anyhow::Result<()>
{
    let codex = codex_binary()?;
    let (world, _server, url) = keel_on_websocket().await?;

    // An earlier, unrelated session through the TUI (interactive: source `vscode`). Its title
    // is on the footer once the title turn is done; the command center then shows that name.
    let unrelated = TuiPane::start(&codex, &[], &url, world.ws())?;
    unrelated.wait_for("Ask Codex to do anything").await?;
    unrelated.type_line("KEEL-UNRELATED tidy the docs").await?;
    unrelated.wait_for("plain answer").await?;
    unrelated.wait_for("· Unrelated chore").await?;
    unrelated.quit().await?;
    drop(unrelated);

    // A `keel exec` run in the same home: not interactive, nobody's agent.
    let out = super::exec::keel_exec(
        world.home.path(),
        world.ws(),
        &["KEEL-EXEC-RUN hello"],
        None,
    )
    .await?;
    anyhow::ensure!(out.code == Some(0), "{}", out.stderr);

    // The session whose model spawns a sub-agent and waits for it.
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;
    tui.type_line("KEEL-SPAWN delegate this").await?;
    tui.wait_for("parent done").await?;
    tui.wait_for("Worked for").await?;
    tui.wait_for("· Delegating session").await?;
    // Live, the TUI learns its agent from `thread/started`, and the rest from the
    // `ancestorThreadId` question it asked at start-up (which must have had no answer).
    only_the_spawned_agent(&tui).await?;

    // The agent command center (← on an empty composer): the top-level threads — both
    // interactive sessions and, as Codex 0.171 asks for them (`sourceKinds: ["exec",
    // "appServer"]`) and Codex's own server lists them, the exec run — never the sub-agent.
    tui.keys(&["Left"])?;
    tui.wait_for("Agent command center").await?;
    let center = tui.wait_for("All 3").await?;
    for row in [
        "Delegating session",
        "Unrelated chore",
        "KEEL-EXEC-RUN hello",
    ] {
        assert!(center.contains(row), "{row:?} is not listed:\n{center}");
    }
    assert!(
        !center.contains("CHILD-TASK"),
        "a sub-agent is listed:\n{center}"
    );
    tui.keys(&["Escape"])?;
    tui.wait_until_gone("Agent command center").await?;
    tui.quit().await?;
    drop(tui);

    // A new TUI: `resume --last` picks the spawning session (not its newer sub-agent, not the
    // exec run) and knows its agent only from `thread/list {ancestorThreadId, sourceKinds:
    // ["subAgentThreadSpawn"]}`: the same cycle.
    let resumed = TuiPane::start(&codex, &["resume", "--last"], &url, world.ws())?;
    resumed.wait_for("parent done").await?;
    only_the_spawned_agent(&resumed).await?;
    resumed.quit().await?;
    Ok(())
}
