//! The Codex 0.171 TUI's `/model` picker on `keel app-server` with today's default model: it
//! lists Keel's catalogue (Codex 0.171's models) and each model's efforts, `max` and `ultra`
//! included (the TUI shows them under "More reasoning…"); the chosen effort is saved and
//! sent, and the turn that follows runs in code mode.
//! Same requirements as `codex_tui.rs`.

use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message};

use super::app_server::common::World;
use super::codex_tui::{TuiPane, codex_binary};
use super::codex_tui_commands::listening;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_picks_a_catalogue_model_and_the_max_effort() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let mock = MockModelServer::builder()
        .responder(|_request: &CapturedRequest| Some(Turn::new([assistant_message("sol here")])))
        .start()
        .await?;
    let world = World::with_mock(mock, &[("model", "gpt-6.2-sol".into())])?;
    let (_server, url) = listening(world.builder()).await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;

    tui.open_model_picker().await?;
    let screen = tui.wait_for("GPT-6.2-Astra").await?;
    anyhow::ensure!(
        screen.contains("GPT-6.2-Sol") && screen.contains("GPT-6.1 Terra"),
        "the picker lists the catalogue:\n{screen}"
    );
    tui.keys(&["Enter"])?;
    tui.wait_for("Select Reasoning Level").await?;
    // The TUI keeps the efforts above `xhigh` one level down, under "More reasoning…".
    tui.wait_for("Max and Ultra").await?;
    for _ in 0..4 {
        tui.keys(&["Down"])?;
    }
    tui.wait_for("› 5. More reasoning").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("Advanced Reasoning").await?;
    tui.wait_for("› 1. Max").await?;
    tui.wait_for("2. Ultra").await?;
    // Enter makes it the default (saved to config.toml).
    tui.keys(&["Enter"])?;
    tui.wait_for("Model changed to gpt-6.2-sol max").await?;
    let config = std::fs::read_to_string(world.home.path().join("config.toml"))?;
    anyhow::ensure!(
        config.contains("model_reasoning_effort = \"max\""),
        "config.toml after the picker:\n{config}"
    );

    tui.type_line("hello sol").await?;
    tui.wait_for("sol here").await?;
    let requests = world.mock.requests();
    let request = requests
        .iter()
        .rev()
        // The TUI's title thread asks about the same prompt; the turn's own request is the
        // one without an output schema.
        .find(|request| {
            request.body.to_string().contains("hello sol")
                && request.body["text"].get("format").is_none()
        })
        .ok_or_else(|| anyhow::anyhow!("no turn request with the prompt"))?;
    anyhow::ensure!(
        request.body["reasoning"]["effort"] == "max"
            && request.input()[0]["type"] == "additional_tools",
        "the turn's request: {}",
        request.body
    );
    tui.quit().await?;
    Ok(())
}
