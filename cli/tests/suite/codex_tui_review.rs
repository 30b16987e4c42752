//! The Codex 0.169 TUI's `/review` on `keel app-server`: the preset picker, a review of the
//! working tree, and the report on screen (it used to end the TUI: `review/start` was
//! unknown). Same requirements as `codex_tui.rs`.

use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message};

use super::app_server::common::World;
use super::app_server::review::{repository, review_json};
use super::codex_tui::{TuiPane, codex_binary};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.169 from npm) and tmux (.ci/run installs both)"
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
    let mut server = world
        .builder()
        .cwd(repo.path())
        .arg("--listen")
        .arg("ws://127.0.0.1:0")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    let tui = TuiPane::start(&codex, &[], &url, repo.path())?;
    tui.wait_for("Ask Codex to do anything").await?;
    tui.type_line("/review").await?;
    tui.wait_for("Review uncommitted changes").await?;
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
