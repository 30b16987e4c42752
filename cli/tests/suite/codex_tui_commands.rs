//! The Codex 0.171 TUI's `/review`, `/goal`, `!cmd` and `/side` on `keel app-server`: the review
//! preset picker, a review of the working tree and its report on screen (it used to end the
//! TUI: `review/start` was unknown); a goal the model works on by itself until it marks it
//! complete; the user's shell command, shown and then seen by the model; a side question
//! that sees the main thread and leaves no trace in it. Same requirements
//! as `codex_tui.rs`.

use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message, function_call};

use super::app_server::common::World;
use super::app_server::review::{repository, review_json};
use super::codex_tui::{TuiPane, codex_binary, poll_until};

/// `keel app-server` from `builder`, listening on a loopback websocket; its `ws://` URL.
pub(super) async fn listening(
    builder: keel_test_support::ProcessBuilder,
) -> anyhow::Result<(keel_test_support::JsonLinesProcess, String)> {
    let mut server = builder.arg("--listen").arg("ws://127.0.0.1:0").spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    Ok((server, url))
}

/// Waits until the TUI's thread exists on the server (its rollout is written before
/// `thread/start` is answered): the TUI draws its composer earlier, and a command typed
/// before the thread exists is refused with "No active thread is available".
pub(super) async fn thread_started(world: &World) -> anyhow::Result<()> {
    let sessions = world.home.path().join("sessions");
    poll_until(|| {
        crate::suite::rollout_files(&sessions)
            .ok()
            .filter(|found| !found.is_empty())
            .map(|_| ())
    })
    .await
    .map_err(|_| anyhow::anyhow!("the TUI's thread was never started"))
}

/// Types `command`, which needs the TUI's thread, and waits for `marker`. The TUI learns its
/// thread from the server's answer, which on a busy machine it may read after the thread is
/// already on disk: a command refused with "No active thread" is typed again.
pub(super) async fn on_thread(tui: &TuiPane, command: &str, marker: &str) -> anyhow::Result<()> {
    const NO_THREAD: &str = "No active thread is available";
    for _ in 0..5 {
        let refusals = tui.screen().matches(NO_THREAD).count();
        tui.type_line(command).await?;
        let outcome = poll_until(|| {
            let screen = tui.screen();
            if screen.contains(marker) {
                Some(true)
            } else {
                (screen.matches(NO_THREAD).count() > refusals).then_some(false)
            }
        })
        .await;
        match outcome {
            Ok(true) => return Ok(()),
            Ok(false) => continue,
            Err(_) => break,
        }
    }
    tui.wait_for(marker).await.map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_reviews_uncommitted_changes_on_keel() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let repo = tempfile::tempdir()?;
    repository(repo.path())?;
    let answer = review_json(&repo.path().join("lib.rs"));
    let mock = MockModelServer::builder()
        .responder(move |request: &CapturedRequest| {
            let reviewing = request.body["instructions"]
                .as_str()
                .is_some_and(|text| text.contains("reviewing a code change"));
            Some(Turn::new([assistant_message(if reviewing {
                answer.clone()
            } else {
                "not a review".to_string()
            })]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let (_server, url) = listening(world.builder().cwd(repo.path())).await?;
    let tui = TuiPane::start(&codex, &[], &url, repo.path())?;
    tui.wait_for("Ask Codex to do anything").await?;
    thread_started(&world).await?;
    on_thread(&tui, "/review", "Review uncommitted changes").await?;
    // The selection moves before Enter confirms it (keys typed at once can outrun the picker).
    tui.keys(&["Down"])?;
    tui.wait_for("› 2. Review uncommitted changes").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("Code review started: uncommitted changes")
        .await?;
    let screen = tui.wait_for("Callers expect 1.").await?;
    anyhow::ensure!(
        screen.contains("Code review finished")
            && screen.contains("Verdict: patch is incorrect")
            && screen.contains("[P1] one() returns 2"),
        "{screen}"
    );
    // Still running, and usable.
    tui.type_line("and now?").await?;
    tui.wait_for("not a review").await?;
    tui.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_sets_a_goal_that_keel_works_to_completion() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let mock = MockModelServer::builder()
        .responder(|request: &CapturedRequest| {
            let text = serde_json::to_string(request.input()).unwrap_or_default();
            let completed = !request.tool_output_call_ids().is_empty();
            Some(if completed {
                Turn::new([assistant_message("KEEL-GOAL-REACHED")])
            } else if text.contains("<goal_context>") && text.contains("tidy the workspace") {
                Turn::new([function_call(
                    "g1",
                    "update_goal",
                    r#"{"status":"complete"}"#,
                )])
            } else {
                Turn::new([assistant_message("not a goal turn")])
            })
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let (_server, url) = listening(world.builder()).await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;
    thread_started(&world).await?;
    on_thread(&tui, "/goal tidy the workspace", "KEEL-GOAL-REACHED").await?;
    // Complete: the TUI stops showing a goal in progress, and Keel started no other turn.
    tui.wait_until_gone("Pursuing goal").await?;
    let requests = world.mock.requests();
    anyhow::ensure!(
        requests
            .iter()
            .filter(|r| r.body["text"]["format"]["type"] != "json_schema")
            .count()
            == 2,
        "one goal turn of two requests: {}",
        requests.len()
    );
    tui.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_runs_a_users_shell_command_on_keel() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let mock = MockModelServer::builder()
        .responder(|request: &CapturedRequest| {
            let text = serde_json::to_string(request.input()).unwrap_or_default();
            Some(Turn::new([assistant_message(
                if text.contains("KEEL-USER-SHELL-OUTPUT") {
                    "the model saw the command"
                } else {
                    "the model did not see it"
                },
            )]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let (_server, url) = listening(world.builder()).await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;
    thread_started(&world).await?;
    // `!` puts the composer in shell mode; the command follows.
    tui.keys(&["!"])?;
    tui.wait_for("Shell mode").await?;
    tui.keys(&["-l", "echo KEEL-USER-SHELL-OUTPUT"])?;
    tui.wait_for("! echo KEEL-USER-SHELL-OUTPUT").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("You ran").await?;
    tui.wait_for("KEEL-USER-SHELL-OUTPUT").await?;
    tui.type_line("what did I run?").await?;
    tui.wait_for("the model saw the command").await?;
    tui.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_asks_a_side_question_that_leaves_the_main_thread_alone() -> anyhow::Result<()>
{
    let codex = codex_binary()?;
    let mock = MockModelServer::builder()
        .responder(|request: &CapturedRequest| {
            let text = serde_json::to_string(request.input()).unwrap_or_default();
            let side = text.contains("Side conversation boundary");
            let answer = if side && text.contains("KIWI-42") {
                "side saw the main thread"
            } else if side {
                "side is blind"
            } else if text.contains("which code") {
                "main heard the side question"
            } else if text.contains("back to work") {
                "main is untouched"
            } else {
                "noted"
            };
            Some(Turn::new([assistant_message(answer)]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let (_server, url) = listening(world.builder()).await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;
    thread_started(&world).await?;
    tui.type_line("the code is KIWI-42").await?;
    tui.wait_for("noted").await?;
    tui.type_line("/side which code did I give?").await?;
    tui.wait_for("side saw the main thread").await?;
    // Closing the side conversation returns to the main thread, which never saw it.
    tui.keys(&["C-c"])?;
    tui.wait_until_gone("side saw the main thread").await?;
    tui.type_line("back to work").await?;
    tui.wait_for("main is untouched").await?;
    tui.quit().await?;
    Ok(())
}
