//! The Codex 0.171 TUI's `/plugins` on `keel app-server`: a plugin of a local marketplace
//! browsed, read and installed from the TUI (it used to end the TUI: the empty
//! `config/batchWrite` it sends to reload the file was refused), its skill then offered by the
//! `$` picker (`skills/changed` follows the install), and used in the running thread: the
//! model gets the skill's instructions. Same requirements as `codex_tui.rs`.

use anyhow::Context;
use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message};

use super::app_server::common::World;
use super::codex_tui::{TuiPane, codex_binary};
use super::codex_tui_commands::{listening, thread_started};

/// A local marketplace `tools` at `root` with plugin `alpha` and its skill `greet`.
fn marketplace(root: &std::path::Path) -> anyhow::Result<()> {
    let write = |path: &str, text: &str| -> anyhow::Result<()> {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().context("a parent")?)?;
        std::fs::write(path, text)?;
        Ok(())
    };
    write(
        ".agents/plugins/marketplace.json",
        r#"{"name": "tools", "plugins": [{"name": "alpha", "source": "./alpha"}]}"#,
    )?;
    write(
        "alpha/.codex-plugin/plugin.json",
        r#"{"name": "alpha", "version": "0.3.0", "description": "Alpha tools",
            "interface": {"displayName": "Alpha"}}"#,
    )?;
    write(
        "alpha/skills/greet/SKILL.md",
        "---\nname: greet\ndescription: Greets people.\n---\nSay KEEL-GREETING to everyone.\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_installs_a_plugin_and_uses_its_skill_on_keel() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let mock = MockModelServer::builder()
        .responder(|request: &CapturedRequest| {
            let sent = request.body.to_string();
            Some(Turn::new([assistant_message(
                if sent.contains("KEEL-GREETING") {
                    "the skill arrived"
                } else {
                    "no skill in the request"
                },
            )]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let market = tempfile::tempdir()?;
    marketplace(market.path())?;
    // The marketplace is added as `keel plugin marketplace add` adds it.
    let config = world.home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str(&format!(
        "\n[marketplaces.tools]\nsource = {:?}\nsource_type = \"local\"\n",
        market.path().display().to_string()
    ));
    std::fs::write(&config, text)?;
    let (_server, url) = listening(world.builder()).await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;
    thread_started(&world).await?;

    // Browse, read and install.
    tui.type_line("/plugins").await?;
    tui.wait_for("Press Enter to install or view plugin details")
        .await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("2. Install plugin").await?;
    // The selection moves before Enter confirms it (keys typed at once can outrun the menu).
    tui.keys(&["Down"])?;
    tui.wait_for("› 2. Install plugin").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("Installed Alpha plugin").await?;
    let installed = world
        .home
        .path()
        .join("plugins/cache/tools/alpha/0.3.0/skills/greet/SKILL.md");
    anyhow::ensure!(
        installed.is_file(),
        "not installed at {}",
        installed.display()
    );

    // The skill is offered by the `$` picker and reaches the model in this thread.
    // Closed before typing: an Escape followed at once by text reaches the TUI as one
    // key sequence and closes nothing.
    tui.press_until_gone(&["Escape"], "esc close").await?;
    // Filtered first: the highlighted row is not always the plugin's skill.
    tui.keys(&["-l", "$greet"])?;
    tui.wait_for("greet (alpha)").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("$alpha:greet").await?;
    tui.keys(&["-l", "say hi"])?;
    tui.wait_for("say hi").await?;
    tui.keys(&["Enter"])?;
    let screen = tui.wait_for("the skill arrived").await;
    anyhow::ensure!(screen.is_ok(), "{}", tui.screen());
    tui.quit().await?;
    Ok(())
}
