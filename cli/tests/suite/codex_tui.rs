//! The real Codex 0.169 terminal UI (`codex --remote`) driven against `keel app-server` in
//! tmux: start-up, a command with an approval, an interrupt, a second turn, quit. The test
//! types into the pane and waits for screen content with deadlines, printing the screen when
//! a wait fails.
//!
//! Needs `tmux` and the Codex binary named by `KEEL_CODEX_TUI` (`.ci/run` installs
//! `@openai/codex@0.169.0` from npm and sets it); without them the test is reported as
//! ignored with the reason, and under `CI` it fails.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{CapturedRequest, MockModelServer, Turn, assistant_message, shell_call};

use crate::suite::app_server::common::World;

/// How long the screen may take to show what a step expects, on two busy cores.
const SCREEN_WAIT: Duration = Duration::from_secs(60);

/// A tmux session running the TUI; killed when dropped.
struct TuiPane {
    session: String,
}

impl TuiPane {
    fn start(
        codex: &PathBuf,
        url: &str,
        codex_home: &std::path::Path,
        cwd: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let session = format!("keel-tui-{}", std::process::id());
        let status = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                "120",
                "-y",
                "40",
                "-c",
            ])
            .arg(cwd)
            .arg("-e")
            .arg(format!("CODEX_HOME={}", codex_home.display()))
            .args(["-e", "OPENAI_API_KEY=unused"])
            .arg(codex)
            .args(["--remote", url])
            .status()
            .context("run tmux")?;
        anyhow::ensure!(status.success(), "tmux new-session failed: {status}");
        Ok(Self { session })
    }

    fn screen(&self) -> String {
        Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default()
    }

    fn keys(&self, keys: &[&str]) -> anyhow::Result<()> {
        let status = Command::new("tmux")
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .status()?;
        anyhow::ensure!(status.success(), "tmux send-keys failed");
        Ok(())
    }

    /// Types `text`, waits until the composer shows it, and presses Enter.
    async fn type_line(&self, text: &str) -> anyhow::Result<()> {
        self.keys(&["-l", text])?;
        self.wait_for(&format!("› {text}")).await?;
        self.keys(&["Enter"])
    }

    /// Waits until the screen holds `text`; fails with the screen otherwise.
    async fn wait_for(&self, text: &str) -> anyhow::Result<String> {
        let shown = async {
            loop {
                let screen = self.screen();
                if screen.contains(text) {
                    return screen;
                }
                // The pane has no change notification; look again shortly.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::time::timeout(SCREEN_WAIT, shown).await.map_err(|_| {
            anyhow::anyhow!(
                "the screen never showed {text:?}; it shows:\n{}",
                self.screen()
            )
        })
    }
}

impl TuiPane {
    /// Waits until the TUI has exited (its tmux session is gone).
    async fn wait_until_closed(&self) -> anyhow::Result<()> {
        let closed = async {
            loop {
                let alive = Command::new("tmux")
                    .args(["has-session", "-t", &self.session])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success());
                if !alive {
                    return;
                }
                // tmux has no exit notification for a detached client; look again shortly.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::time::timeout(SCREEN_WAIT, closed)
            .await
            .map_err(|_| anyhow::anyhow!("the TUI did not quit; it shows:\n{}", self.screen()))
    }
}

impl Drop for TuiPane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.session])
            .status();
    }
}

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

/// Answers the TUI's title requests with a title, and the conversation by what the user
/// typed last (and whether the command already ran).
fn responder(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    let ran = !request.tool_output_call_ids().is_empty();
    // The title turns are the ones with an output schema (their input quotes the user's
    // prompt, so the text cannot tell them apart).
    if request.body["text"]["format"]["type"] == "json_schema" {
        return Some(Turn::new([assistant_message(
            r#"{"title": "Keel TUI test"}"#,
        )]));
    }
    let last = text.rsplit("KEEL-STEP").next().unwrap_or_default();
    Some(if last.starts_with("-1") {
        if ran {
            Turn::new([assistant_message("keel wrote the file")])
        } else {
            Turn::new([shell_call("c1", ["bash", "-lc", "echo from-tui > tui.txt"])])
        }
    } else if last.starts_with("-2") {
        Turn::new([shell_call("c2", ["bash", "-lc", "sleep 120"])])
    } else {
        Turn::new([assistant_message("keel second answer")])
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.169 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_runs_a_session_on_keel() -> anyhow::Result<()> {
    let codex = std::env::var_os("KEEL_CODEX_TUI")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .context(
            "KEEL_CODEX_TUI is not set; install the Codex 0.169 TUI:\n  \
             npm install --prefix target/npm @openai/codex@0.169.0\n  \
             KEEL_CODEX_TUI=$(find $PWD/target/npm -path '*x86_64-unknown-linux-musl/bin/codex' -type f)",
        )?;
    let mock = MockModelServer::builder()
        .responder(responder)
        .start()
        .await?;
    let world = World::with_mock(mock, &[("approval_policy", "untrusted".into())])?;
    let mut server = world
        .builder()
        .arg("--listen")
        .arg("ws://127.0.0.1:0")
        .spawn()?;
    let address = server.websocket_address().await?;
    let codex_home = tempfile::tempdir()?;
    // Typed keys arrive faster than a person types; without this the TUI takes them for a
    // paste and the Enter that follows for a newline in it.
    std::fs::write(
        codex_home.path().join("config.toml"),
        "disable_paste_burst = true\n",
    )?;
    let tui = TuiPane::start(
        &codex,
        &format!("ws://{address}"),
        codex_home.path(),
        world.ws(),
    )?;
    tui.wait_for("Ask Codex to do anything").await?;

    tui.type_line("KEEL-STEP-1 write a file").await?;
    tui.wait_for("Would you like to run the following command?")
        .await?;
    tui.keys(&["y"])?;
    tui.wait_for("keel wrote the file").await?;
    assert_eq!(
        std::fs::read_to_string(world.ws_file("tui.txt"))?,
        "from-tui\n"
    );

    tui.type_line("KEEL-STEP-2 wait a while").await?;
    tui.wait_for("Would you like to run the following command?")
        .await?;
    tui.keys(&["y"])?;
    tui.wait_for("esc to interrupt").await?;
    tui.keys(&["Escape"])?;
    tui.wait_for("interrupted").await?;

    tui.type_line("KEEL-STEP-3 once more").await?;
    tui.wait_for("keel second answer").await?;

    tui.keys(&["C-c"])?;
    tui.keys(&["C-c"])?;
    tui.wait_until_closed().await?;
    Ok(())
}
