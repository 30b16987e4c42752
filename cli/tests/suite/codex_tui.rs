//! The real Codex 0.171 terminal UI (`codex --remote`) driven against `keel app-server` in
//! tmux: start-up, a command with an approval, an interrupt, a second turn, quit; and the
//! model and permission pickers, `/new`, and `codex resume --last`. The test
//! types into the pane and waits for screen content with deadlines, printing the screen when
//! a wait fails.
//!
//! Needs `tmux` and the Codex binary named by `KEEL_CODEX_TUI` (`.ci/run` installs
//! `@openai/codex@0.171.0` from npm and sets it); without them the test is reported as
//! ignored with the reason, and under `CI` it fails.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::error::Elapsed;

use anyhow::Context;
use keel_test_support::{
    CapturedRequest, JsonLinesProcess, MockModelServer, Turn, assistant_message, exec_command_call,
    shell_call,
};

use crate::suite::app_server::common::World;

/// What the model leaves running for `/ps` and `/stop` (a duration no other test uses).
const BACKGROUND_COMMAND: &str = "sleep 3071";

/// Whether a process runs `BACKGROUND_COMMAND` (read from `/proc`).
fn background_command_runs() -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| {
            String::from_utf8_lossy(&cmdline).replace('\0', " ").trim() == BACKGROUND_COMMAND
        })
}

/// How long the screen may take to show what a step expects, on two busy cores.
const SCREEN_WAIT: Duration = Duration::from_secs(60);

/// A tmux session running the TUI with a `CODEX_HOME` of its own; killed when dropped.
pub(super) struct TuiPane {
    session: String,
    _codex_home: tempfile::TempDir,
}

impl TuiPane {
    /// Runs `codex [ARGS] --remote URL` in a new tmux session.
    pub(super) fn start(
        codex: &PathBuf,
        args: &[&str],
        url: &str,
        cwd: &std::path::Path,
    ) -> anyhow::Result<Self> {
        Self::start_with_env(codex, args, url, cwd, &[])
    }

    /// [`Self::start`] with extra environment variables for the TUI.
    fn start_with_env(
        codex: &PathBuf,
        args: &[&str],
        url: &str,
        cwd: &std::path::Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let codex_home = tui_home()?;
        static SESSIONS: AtomicUsize = AtomicUsize::new(0);
        let session = format!(
            "keel-tui-{}-{}",
            std::process::id(),
            SESSIONS.fetch_add(1, Ordering::Relaxed)
        );
        // A tmux server per pane (`-L`): panes of tests running at once never race one
        // server's start or exit.
        let status = Command::new("tmux")
            .args(["-L", &session])
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
            .arg(format!("CODEX_HOME={}", codex_home.path().display()))
            .args(["-e", "OPENAI_API_KEY=unused"])
            .args(
                env.iter()
                    .flat_map(|(name, value)| ["-e".to_string(), format!("{name}={value}")]),
            )
            .arg(codex)
            .args(args)
            .args(["--remote", url])
            .status()
            .context("run tmux")?;
        anyhow::ensure!(status.success(), "tmux new-session failed: {status}");
        Ok(Self {
            session,
            _codex_home: codex_home,
        })
    }

    /// A tmux command talking to this pane's own server.
    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.session]);
        command
    }

    /// Waits until the screen no longer shows `text`.
    pub(super) async fn wait_until_gone(&self, text: &str) -> anyhow::Result<()> {
        poll_until(|| (!self.screen().contains(text)).then_some(()))
            .await
            .map_err(|_| anyhow::anyhow!("the screen kept showing {text:?}:\n{}", self.screen()))
    }

    pub(super) fn screen(&self) -> String {
        self.tmux()
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default()
    }

    pub(super) fn keys(&self, keys: &[&str]) -> anyhow::Result<()> {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.session])
            .args(keys)
            .stderr(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "tmux send-keys failed");
        Ok(())
    }

    /// Types `text`, waits until the composer shows it, and presses Enter.
    pub(super) async fn type_line(&self, text: &str) -> anyhow::Result<()> {
        self.keys(&["-l", text])?;
        self.wait_for(&format!("› {text}")).await?;
        self.keys(&["Enter"])
    }

    /// Opens the model picker. The TUI refuses it, with a line saying so, until its start-up
    /// requests are all answered (which takes a while on busy cores, after the composer is
    /// already shown); each refusal is answered by asking again.
    pub(super) async fn open_model_picker(&self) -> anyhow::Result<()> {
        const NOT_YET: &str = "Model selection is disabled until startup completes";
        let refusals = |screen: &str| screen.matches(NOT_YET).count();
        tokio::time::timeout(SCREEN_WAIT, async {
            loop {
                let before = refusals(&self.screen());
                self.type_line("/model").await?;
                let screen = poll_until(|| {
                    Some(self.screen()).filter(|screen| {
                        screen.contains("Select Model and Effort") || refusals(screen) > before
                    })
                })
                .await?;
                if screen.contains("Select Model and Effort") {
                    return anyhow::Ok(());
                }
            }
        })
        .await
        .map_err(|_| {
            let message = format!(
                "the model picker never opened; the screen shows:\n{}",
                self.screen()
            );
            report_now(&message);
            anyhow::anyhow!(message)
        })?
    }

    /// Closes the view whose screen shows `marker` with Esc, and waits until it is gone before
    /// anything else is typed: keys that follow an Esc too closely are read as one Alt
    /// sequence, so on busy cores an Esc can be lost.
    async fn close_view(&self, marker: &str) -> anyhow::Result<()> {
        self.press_until_gone(&["Escape"], marker).await
    }

    /// Presses `keys` until the screen no longer shows `marker` (a prompt or view they
    /// answer): a key sent while the TUI is still starting up can be lost, so each press gets
    /// a few seconds to work before it is sent again.
    pub(super) async fn press_until_gone(&self, keys: &[&str], marker: &str) -> anyhow::Result<()> {
        tokio::time::timeout(SCREEN_WAIT, async {
            loop {
                self.keys(keys)?;
                let closed = tokio::time::timeout(Duration::from_secs(5), async {
                    while self.screen().contains(marker) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                })
                .await;
                if closed.is_ok() {
                    return anyhow::Ok(());
                }
            }
        })
        .await
        .map_err(|_| {
            let message = format!("{marker:?} did not go away:\n{}", self.screen());
            report_now(&message);
            anyhow::anyhow!(message)
        })?
    }

    /// Waits until the screen holds `text`; fails with the screen otherwise.
    pub(super) async fn wait_for(&self, text: &str) -> anyhow::Result<String> {
        poll_until(|| Some(self.screen()).filter(|screen| screen.contains(text)))
            .await
            .map_err(|_| {
                let message = format!(
                    "the screen never showed {text:?}; it shows:\n{}",
                    self.screen()
                );
                report_now(&message);
                anyhow::anyhow!(message)
            })
    }
}

/// Writes `message` to the test process's stderr at once, past the test harness's capture, so
/// a failure's screen shows beside the test's name even where only part of a run's output is
/// kept.
fn report_now(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "codex_tui: {message}");
}

/// Checks `ready` every 100 ms until it gives a value, for at most [`SCREEN_WAIT`]: the pane,
/// tmux and the process table have no change notification to wait on.
pub(super) async fn poll_until<T>(mut ready: impl FnMut() -> Option<T>) -> Result<T, Elapsed> {
    tokio::time::timeout(SCREEN_WAIT, async {
        loop {
            if let Some(value) = ready() {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
}

impl TuiPane {
    /// Quits with Ctrl-C (twice: the first may only clear the composer) and waits until the
    /// TUI has exited. On busy cores a pair of presses can be read before the TUI is ready for
    /// them (one CI run saw both lost), so the pair is sent again every few seconds until the
    /// TUI is gone.
    pub(super) async fn quit(&self) -> anyhow::Result<()> {
        let presses = tokio::time::timeout(SCREEN_WAIT, async {
            loop {
                // Either press may find the session already ended.
                let _ = self.keys(&["C-c"]);
                let _ = self.keys(&["C-c"]);
                if tokio::time::timeout(Duration::from_secs(5), self.wait_until_closed())
                    .await
                    .is_ok()
                {
                    return;
                }
            }
        })
        .await;
        presses.map_err(|_| {
            let message = format!("the TUI did not quit; it shows:\n{}", self.screen());
            report_now(&message);
            anyhow::anyhow!(message)
        })
    }

    /// Resolves once the TUI's tmux session is gone.
    async fn wait_until_closed(&self) {
        while self.alive() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether the TUI's tmux session still exists.
    fn alive(&self) -> bool {
        self.tmux()
            .args(["has-session", "-t", &self.session])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }
}

impl Drop for TuiPane {
    fn drop(&mut self) {
        let _ = self
            .tmux()
            .args(["kill-session", "-t", &self.session])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// The text of a request's input messages.
pub(super) fn input_text(request: &CapturedRequest) -> String {
    request
        .input()
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a model request is one of the TUI's title turns: those have an output schema (their
/// input quotes the user's prompt, so the text cannot tell them apart).
fn is_title_request(request: &CapturedRequest) -> bool {
    request.body["text"]["format"]["type"] == "json_schema"
}

/// Answers the TUI's title requests with a title, and the conversation by what the user
/// typed last (and whether the command already ran).
fn responder(request: &CapturedRequest) -> Option<Turn> {
    let text = input_text(request);
    let ran = !request.tool_output_call_ids().is_empty();
    if is_title_request(request) {
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
    } else if last.starts_with("-4") {
        Turn::new([assistant_message("keel answer after resume")])
    } else if last.starts_with("-5") {
        if ran {
            Turn::new([assistant_message("keel left it running")])
        } else {
            Turn::new([exec_command_call(
                "c5",
                serde_json::json!({"cmd": BACKGROUND_COMMAND, "yield_time_ms": 250, "login": false}),
            )])
        }
    } else {
        Turn::new([assistant_message("keel second answer")])
    })
}

/// The Codex binary named by `KEEL_CODEX_TUI`.
pub(super) fn codex_binary() -> anyhow::Result<PathBuf> {
    std::env::var_os("KEEL_CODEX_TUI")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .context(
            "KEEL_CODEX_TUI is not set; install the Codex 0.171 TUI:\n  \
             npm install --prefix target/npm-codex-0.171.0 @openai/codex@0.171.0\n  \
             KEEL_CODEX_TUI=$(find $PWD/target/npm-codex-0.171.0 -path '*x86_64-unknown-linux-musl/bin/codex' -type f)",
        )
}

/// The mock model (answering by [`responder`]), a Keel home whose policy is `untrusted`, and
/// `keel app-server` listening on a websocket; returns the server's `ws://` URL.
async fn keel_on_websocket() -> anyhow::Result<(World, JsonLinesProcess, String)> {
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
    let url = format!("ws://{}", server.websocket_address().await?);
    Ok((world, server, url))
}

/// A fresh `CODEX_HOME` for one TUI process (never shared, so nothing one run leaves behind
/// changes the next). Typed keys arrive faster than a person types; without
/// `disable_paste_burst` the TUI takes them for a paste and the Enter that follows for a
/// newline in it. The update check is off: what it finds depends on the network.
fn tui_home() -> anyhow::Result<tempfile::TempDir> {
    let codex_home = tempfile::tempdir()?;
    std::fs::write(
        codex_home.path().join("config.toml"),
        "disable_paste_burst = true\ncheck_for_update_on_startup = false\n",
    )?;
    Ok(codex_home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_runs_a_session_on_keel() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let (world, _server, url) = keel_on_websocket().await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;

    tui.type_line("KEEL-STEP-1 write a file").await?;
    tui.wait_for("Would you like to run the following command?")
        .await?;
    // A key read while the prompt is still being drawn is lost on busy cores: pressed until
    // the prompt goes.
    tui.press_until_gone(&["y"], "Would you like to run the following command?")
        .await?;
    tui.wait_for("keel wrote the file").await?;
    assert_eq!(
        std::fs::read_to_string(world.ws_file("tui.txt"))?,
        "from-tui\n"
    );

    tui.type_line("KEEL-STEP-2 wait a while").await?;
    tui.wait_for("Would you like to run the following command?")
        .await?;
    tui.press_until_gone(&["y"], "Would you like to run the following command?")
        .await?;
    tui.wait_for("esc to interrupt").await?;
    tui.keys(&["Escape"])?;
    tui.wait_for("interrupted").await?;

    tui.type_line("KEEL-STEP-3 once more").await?;
    tui.wait_for("keel second answer").await?;

    tui.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_sends_its_token_to_a_protected_keel() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let mock = MockModelServer::builder()
        .responder(responder)
        .start()
        .await?;
    let world = World::with_mock(mock, &[("approval_policy", "untrusted".into())])?;
    let token_file = world.home.path().join("ws-token");
    std::fs::write(&token_file, "tui-token-0123456789")?;
    let mut server = world
        .builder()
        .args([
            "--listen",
            "ws://127.0.0.1:0",
            "--ws-auth",
            "capability-token",
        ])
        .arg("--ws-token-file")
        .arg(&token_file)
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);

    // The wrong token is refused at the upgrade: the TUI never gets a session.
    let refused = TuiPane::start_with_env(
        &codex,
        &["--remote-auth-token-env", "KEEL_TUI_TOKEN"],
        &url,
        world.ws(),
        &[("KEEL_TUI_TOKEN", "wrong-token")],
    )?;
    server
        .wait_for_stderr_line("the refusal", |line| {
            line.contains("refusing a connection") && line.contains("invalid bearer token")
        })
        .await?;
    drop(refused);

    let tui = TuiPane::start_with_env(
        &codex,
        &["--remote-auth-token-env", "KEEL_TUI_TOKEN"],
        &url,
        world.ws(),
        &[("KEEL_TUI_TOKEN", "tui-token-0123456789")],
    )?;
    tui.wait_for("Ask Codex to do anything").await?;
    tui.type_line("KEEL-STEP-3 once more").await?;
    tui.wait_for("keel second answer").await?;
    tui.quit().await?;
    Ok(())
}

/// The conversation requests (not title turns) the mock has seen.
fn conversation_requests(world: &World) -> Vec<CapturedRequest> {
    world
        .mock
        .requests()
        .into_iter()
        .filter(|request| !is_title_request(request))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_pickers_new_thread_and_resume_work_on_keel() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let (world, _server, url) = keel_on_websocket().await?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    tui.wait_for("Ask Codex to do anything").await?;

    // The model picker: the model, then "High" as the default effort (saved to config.toml
    // with config/batchWrite, applied to this thread with thread/settings/update).
    tui.open_model_picker().await?;
    tui.wait_for("1. mock-model").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("Select Reasoning Level").await?;
    tui.keys(&["Down"])?;
    tui.wait_for("› 3. High").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("Model changed to mock-model high").await?;
    let config = std::fs::read_to_string(world.home.path().join("config.toml"))?;
    assert!(
        config.contains("model_reasoning_effort = \"high\""),
        "config.toml after the picker:\n{config}"
    );

    // The permission picker: full access, so the command runs without asking although the
    // server's policy is `untrusted`.
    tui.type_line("/permissions").await?;
    tui.wait_for("Update Model Permissions").await?;
    // The options come with the answer to permissionProfile/list.
    tui.wait_for("3. Full Access").await?;
    tui.keys(&["3"])?;
    tui.wait_for("Enable full access?").await?;
    tui.keys(&["Enter"])?;
    tui.wait_for("Permission selection requested: Full Access")
        .await?;
    tui.type_line("KEEL-STEP-1 write a file").await?;
    tui.wait_for("keel wrote the file").await?;
    assert_eq!(
        std::fs::read_to_string(world.ws_file("tui.txt"))?,
        "from-tui\n"
    );
    let first = conversation_requests(&world);
    let request = first.first().context("no model request")?;
    assert_eq!(
        request.body["reasoning"]["effort"], "high",
        "{}",
        request.body
    );

    // /new: a fresh thread, which reads the effort the picker saved. The TUI refuses `/new`
    // while it still counts the turn as running, so wait for its end-of-turn line first.
    tui.wait_for("Worked for").await?;
    tui.type_line("/new").await?;
    poll_until(|| (!tui.screen().contains("keel wrote the file")).then_some(()))
        .await
        .map_err(|_| anyhow::anyhow!("/new kept the old transcript:\n{}", tui.screen()))?;
    tui.type_line("KEEL-STEP-3 once more").await?;
    tui.wait_for("keel second answer").await?;
    let requests = conversation_requests(&world);
    let request = requests.last().context("no model request")?;
    assert!(input_text(request).contains("KEEL-STEP-3"));
    assert!(
        !input_text(request).contains("KEEL-STEP-1"),
        "the new thread carried the old one's history"
    );
    assert_eq!(
        request.body["reasoning"]["effort"], "high",
        "{}",
        request.body
    );
    tui.quit().await?;
    drop(tui);

    // `codex resume --last`: the /new thread comes back with its history, and goes on.
    let resumed = TuiPane::start(&codex, &["resume", "--last"], &url, world.ws())?;
    resumed.wait_for("keel second answer").await?;
    resumed.type_line("KEEL-STEP-4 after resume").await?;
    resumed.wait_for("keel answer after resume").await?;

    // `/ps` shows the process the model left running; `/stop` kills it.
    resumed.type_line("KEEL-STEP-5 start a server").await?;
    resumed
        .wait_for("Would you like to run the following command?")
        .await?;
    resumed
        .press_until_gone(&["y"], "Would you like to run the following command?")
        .await?;
    resumed.wait_for("keel left it running").await?;
    assert!(background_command_runs());
    resumed.type_line("/ps").await?;
    resumed.wait_for("1 background terminal running").await?;
    resumed.type_line("/stop").await?;
    resumed
        .wait_for("Stopping all background terminals")
        .await?;
    poll_until(|| (!background_command_runs()).then_some(()))
        .await
        .map_err(|_| anyhow::anyhow!("/stop left `{BACKGROUND_COMMAND}` running"))?;
    let requests = conversation_requests(&world);
    let request = requests.last().context("no model request")?;
    let text = input_text(request);
    assert!(
        text.contains("KEEL-STEP-3") && text.contains("KEEL-STEP-4"),
        "the resumed thread lost its history: {text}"
    );
    resumed.quit().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_codex_tui),
    ignore = "needs KEEL_CODEX_TUI (Codex 0.171 from npm) and tmux (.ci/run installs both)"
)]
async fn the_codex_tui_shows_and_changes_keel_skills_and_hooks() -> anyhow::Result<()> {
    let codex = codex_binary()?;
    let (world, _server, url) = keel_on_websocket().await?;
    let skill_dir = world.home.path().join("skills/tui-demo-skill");
    std::fs::create_dir_all(&skill_dir)?;
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: tui-demo-skill\ndescription: Shows how Keel lists a skill\n---\nBody.\n",
    )?;
    let config_file = world.home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&config_file)?;
    config.push_str(
        "\n[[hooks.UserPromptSubmit]]\n[[hooks.UserPromptSubmit.hooks]]\n\
         type = \"command\"\ncommand = \"touch hook-ran\"\n",
    );
    std::fs::write(&config_file, config)?;
    let tui = TuiPane::start(&codex, &[], &url, world.ws())?;
    // The TUI asks about the untrusted hook Keel reports at start; go on without trusting.
    tui.wait_for("Hooks need review").await?;
    tui.wait_for("3. Continue without trusting").await?;
    tui.press_until_gone(&["3"], "Hooks need review").await?;
    tui.wait_for("Ask Codex to do anything").await?;

    // /skills lists Keel's skill; turning it off is written to Keel's config.
    // The TUI loads its skills list after start-up; opened before that, /skills says there
    // are none, and is opened again.
    for attempt in 1.. {
        anyhow::ensure!(
            attempt <= 20,
            "/skills never listed the skill:\n{}",
            tui.screen()
        );
        tui.type_line("/skills").await?;
        let screen = poll_until(|| {
            let screen = tui.screen();
            (screen.contains("Enable/Disable Skills") || screen.contains("No skills available"))
                .then_some(screen)
        })
        .await
        .map_err(|_| anyhow::anyhow!("/skills never opened:\n{}", tui.screen()))?;
        if screen.contains("Enable/Disable Skills") {
            break;
        }
        tui.wait_for("Ask Codex to do anything").await?;
    }
    tui.keys(&["2"])?;
    tui.wait_for("[x] tui-demo-skill  Shows how Keel lists a skill")
        .await?;
    tui.keys(&["Space"])?;
    tui.wait_for("[ ] tui-demo-skill").await?;
    poll_until(|| {
        std::fs::read_to_string(&config_file)
            .ok()
            .filter(|text| text.contains("tui-demo-skill") && text.contains("enabled = false"))
    })
    .await
    .map_err(|_| anyhow::anyhow!("the skill switch never reached config.toml"))?;
    tui.close_view("Enable/Disable Skills").await?;

    // /hooks shows the untrusted hook; trusting it records its hash, and it then runs.
    tui.type_line("/hooks").await?;
    tui.wait_for("1 hook needs review before it can run")
        .await?;
    tui.wait_for("UserPromptSubmit").await?;
    tui.keys(&["t"])?;
    poll_until(|| {
        std::fs::read_to_string(&config_file)
            .ok()
            .filter(|text| text.contains("trusted_hash = \"sha256:"))
    })
    .await
    .map_err(|_| anyhow::anyhow!("trusting the hook never reached config.toml"))?;
    poll_until(|| (!tui.screen().contains("needs review")).then_some(()))
        .await
        .map_err(|_| anyhow::anyhow!("the hook still needs review:\n{}", tui.screen()))?;
    tui.close_view("Lifecycle hooks from config").await?;
    tui.type_line("KEEL-STEP-3 once more").await?;
    tui.wait_for("keel second answer").await?;
    assert!(
        world.ws_file("hook-ran").exists(),
        "the trusted hook did not run"
    );
    tui.quit().await?;
    Ok(())
}
