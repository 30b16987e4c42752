//! Login-shell snapshots: a `bash -lc` command sees what the login profile sets up (exported
//! variables, functions, aliases) while the profile itself runs once per conversation, again
//! only when it changes, and commands fall back to a real login shell when capture fails.

use std::path::Path;

use keel_test_support::{Turn, exec_command_call, shell_call};
use serde_json::json;

use super::run;

/// A HOME whose `.bash_profile` is `profile`; every run of it appends a line to
/// `profile-runs`.
fn home_with_profile(profile: &str) -> anyhow::Result<tempfile::TempDir> {
    let home = tempfile::tempdir()?;
    std::fs::write(
        home.path().join(".bash_profile"),
        format!("echo run >> \"$HOME/profile-runs\"\n{profile}"),
    )?;
    Ok(home)
}

fn profile_runs(home: &Path) -> usize {
    std::fs::read_to_string(home.join("profile-runs"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_profile_runs_once_and_its_definitions_reach_every_command() -> anyhow::Result<()> {
    let home = home_with_profile(
        "sleep 0.5\n\
         export KEEL_PROFILE_VAR=from-profile\n\
         greet() { echo \"hello $1\"; }\n\
         alias say='echo alias-said'\n",
    )?;
    let ws = tempfile::tempdir()?;
    let both = "greet world; say; echo \"var=$KEEL_PROFILE_VAR\"";
    let run = run(
        ws.path(),
        vec![
            Turn::new([exec_command_call("c1", json!({"cmd": both}))]),
            Turn::new([exec_command_call("c2", json!({"cmd": both}))]),
            Turn::new([shell_call("c3", ["bash", "-lc", both])]),
            // A command that changes the profile: the next one sees the change.
            Turn::new([exec_command_call(
                "c4",
                json!({"cmd": "echo 'greet2() { echo second-definition; }' >> ~/.bash_profile"}),
            )]),
            Turn::new([exec_command_call("c5", json!({"cmd": "greet2"}))]),
        ],
        &[("HOME", &home.path().to_string_lossy())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let shell: serde_json::Value = serde_json::from_str(&run.output("c3"))?;
    let shell = shell["output"].as_str().unwrap_or_default().to_string();
    for (call, output) in [
        ("c1", run.output("c1")),
        ("c2", run.output("c2")),
        ("c3", shell),
    ] {
        assert!(
            output.contains("hello world\nalias-said\nvar=from-profile\n"),
            "{call}: {output}"
        );
    }
    let changed = run.output("c5");
    assert!(
        changed.contains("Process exited with code 0") && changed.contains("second-definition"),
        "{changed}"
    );
    // Captured once at the start and once after the change; no command ran the profile.
    assert_eq!(profile_runs(home.path()), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_profile_falls_back_to_real_login_shells() -> anyhow::Result<()> {
    let home = home_with_profile("exit 7\n")?;
    let ws = tempfile::tempdir()?;
    let run = run(
        ws.path(),
        vec![
            Turn::new([exec_command_call("c1", json!({"cmd": "echo one"}))]),
            Turn::new([exec_command_call("c2", json!({"cmd": "echo two"}))]),
            Turn::new([exec_command_call(
                "c3",
                json!({"cmd": "echo not-a-login-shell", "login": false}),
            )]),
        ],
        &[("HOME", &home.path().to_string_lossy())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // A login shell whose profile exits 7 never runs the command: Keel gives the model
    // exactly that, as `bash -lc` would.
    for call in ["c1", "c2"] {
        let output = run.output(call);
        assert!(output.contains("Process exited with code 7"), "{output}");
    }
    let plain = run.output("c3");
    assert!(
        plain.contains("Process exited with code 0") && plain.contains("not-a-login-shell"),
        "{plain}"
    );
    // One failed capture, then one real login shell per command; the failure is not retried
    // while the profile is unchanged.
    assert_eq!(profile_runs(home.path()), 3);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_zsh), ignore = "needs zsh on PATH (.ci/run installs it)")]
async fn zsh_login_profiles_are_captured_too() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    std::fs::write(
        home.path().join(".zprofile"),
        "echo run >> \"$HOME/profile-runs\"\n\
         export KEEL_PROFILE_VAR=from-zprofile\n\
         greet() { echo \"hello $1\"; }\n\
         alias say='echo alias-said'\n",
    )?;
    let ws = tempfile::tempdir()?;
    let both = "greet zsh; say; echo \"var=$KEEL_PROFILE_VAR\"";
    let run = run(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": both, "shell": "zsh"}),
            )]),
            Turn::new([exec_command_call(
                "c2",
                json!({"cmd": format!("{both}; exit 4"), "shell": "zsh"}),
            )]),
        ],
        &[("HOME", &home.path().to_string_lossy())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for call in ["c1", "c2"] {
        let output = run.output(call);
        assert!(
            output.contains("hello zsh\nalias-said\nvar=from-zprofile\n"),
            "{call}: {output}"
        );
    }
    assert!(run.output("c2").contains("Process exited with code 4"));
    assert_eq!(profile_runs(home.path()), 1);
    Ok(())
}

/// One `keel exec` with Keel home `keel_home` and user home `home`, whose model runs
/// `bash -lc 'echo value=$KEEL_PROFILE_VAR'`; returns what the command printed.
async fn run_in_home(keel_home: &Path, home: &Path, ws: &Path) -> anyhow::Result<String> {
    use anyhow::Context;
    use keel_test_support::{MockModelServer, Script, assistant_message, write_config};
    let mock = MockModelServer::start(Script::new([
        Turn::new([shell_call(
            "c1",
            ["bash", "-lc", "echo value=$KEEL_PROFILE_VAR"],
        )]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    write_config(keel_home, &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["exec", "show the value"])
            .current_dir(ws)
            .env("KEEL_HOME", keel_home)
            .env("HOME", home)
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .context("keel exec did not finish")??;
    anyhow::ensure!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown = mock
        .requests()
        .iter()
        .find_map(|request| request.tool_output("c1").cloned())
        .map(|value| value.to_string())
        .unwrap_or_default();
    Ok(shown)
}

/// The snapshot outlives the session: a second `keel exec` reuses it without running the
/// profile, and a change to `~/.bashrc` or to a file it sources (found while capturing)
/// takes effect at the next run. The snapshot is private to the user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_persist_across_runs_until_a_sourced_file_changes() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let keel_home = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    let env_dir = home.path().join("env");
    std::fs::create_dir_all(&env_dir)?;
    std::fs::write(
        home.path().join(".bash_profile"),
        "echo run >> \"$HOME/profile-runs\"\n. \"$HOME/.bashrc\"\n",
    )?;
    std::fs::write(
        home.path().join(".bashrc"),
        "source \"$HOME/env/tool.sh\"\n",
    )?;
    std::fs::write(env_dir.join("tool.sh"), "export KEEL_PROFILE_VAR=first\n")?;

    let first = run_in_home(keel_home.path(), home.path(), ws.path()).await?;
    assert!(first.contains("value=first"), "{first}");
    let second = run_in_home(keel_home.path(), home.path(), ws.path()).await?;
    assert!(second.contains("value=first"), "{second}");
    assert_eq!(
        profile_runs(home.path()),
        1,
        "the second run reuses the snapshot"
    );

    // A file sourced indirectly changes: the next run captures again.
    std::fs::write(
        env_dir.join("tool.sh"),
        "export KEEL_PROFILE_VAR=second-value\n",
    )?;
    let third = run_in_home(keel_home.path(), home.path(), ws.path()).await?;
    assert!(third.contains("value=second-value"), "{third}");
    assert_eq!(profile_runs(home.path()), 2);

    // And ~/.bashrc itself.
    std::fs::write(
        home.path().join(".bashrc"),
        "source \"$HOME/env/tool.sh\"\nexport KEEL_PROFILE_VAR=from-bashrc\n",
    )?;
    let fourth = run_in_home(keel_home.path(), home.path(), ws.path()).await?;
    assert!(fourth.contains("value=from-bashrc"), "{fourth}");
    assert_eq!(profile_runs(home.path()), 3);

    let snapshots: Vec<std::path::PathBuf> =
        std::fs::read_dir(keel_home.path().join("shell-snapshots"))?
            .flatten()
            .map(|entry| entry.path().join("snapshot.sh"))
            .collect();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    let mode = std::fs::metadata(&snapshots[0])?.permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    Ok(())
}

/// Sessions that need the same snapshot at once share one capture: four threads of one
/// app-server each start with a `bash -lc` command, all at once on an empty cache, and the
/// slow profile runs once between them (it ran once per session before), while every command
/// still sees what it exports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_starting_together_share_one_capture() -> anyhow::Result<()> {
    use keel_test_support::{CapturedRequest, MockModelServer, assistant_message};

    use crate::suite::app_server::common::World;

    fn respond(request: &CapturedRequest) -> Option<Turn> {
        let task = request.input().iter().rev().find_map(|item| {
            let text = item.pointer("/content/0/text")?.as_str()?;
            text.strip_prefix("task ").map(str::to_owned)
        })?;
        let call_id = format!("call-{task}");
        Some(if request.tool_output_call_ids().contains(&call_id) {
            Turn::new([assistant_message(format!("done {task}"))])
        } else {
            Turn::new([shell_call(
                call_id,
                ["bash", "-lc", "echo value=$KEEL_PROFILE_VAR"],
            )])
        })
    }

    const SESSIONS: usize = 4;
    // Slow enough that every session asks while the first capture runs, even on a busy machine.
    let home = home_with_profile("sleep 1\nexport KEEL_PROFILE_VAR=shared\n")?;
    let mock = MockModelServer::builder()
        .responder(respond)
        .start()
        .await?;
    let world = World::with_mock(mock, &[])?;
    let mut server = world
        .server_with(world.builder().env("HOME", home.path()))
        .await?;
    let mut threads = Vec::new();
    for _ in 0..SESSIONS {
        threads.push(server.start_thread(world.thread_params()).await?);
    }
    for (task, thread) in threads.iter().enumerate() {
        server.start_turn(thread, &format!("task {task}")).await?;
    }
    for _ in 0..SESSIONS {
        let completed = server.read_notification("turn/completed").await?;
        assert_eq!(
            completed["params"]["turn"]["status"], "completed",
            "{completed}"
        );
    }
    for task in 0..SESSIONS {
        let output = world
            .mock
            .requests()
            .iter()
            .find_map(|request| request.tool_output(&format!("call-{task}")).cloned())
            .map(|value| value.to_string())
            .unwrap_or_default();
        assert!(output.contains("value=shared"), "task {task}: {output}");
    }
    assert_eq!(profile_runs(home.path()), 1);
    Ok(())
}

/// A home whose login profile never finishes: the first command's capture of it is under way
/// when the person interrupts the turn. The turn ends at once (it used to wait for the
/// capture), and the command never starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_during_the_profile_capture_ends_the_turn_at_once() -> anyhow::Result<()> {
    use keel_test_support::Script;

    use crate::suite::app_server::common::World;

    let home = home_with_profile("sleep 600\n")?;
    let script = Script::new([Turn::new([shell_call(
        "first",
        ["bash", "-lc", "touch started.txt"],
    )])]);
    let world = World::new(script, &[]).await?;
    let mut server = world
        .server_with(world.builder().env("HOME", home.path()))
        .await?;
    let thread_id = server.start_thread(world.thread_params()).await?;
    let turn_id = server.start_turn(&thread_id, "go").await?;
    server
        .read_until("command started", |m| {
            m["method"] == "item/started" && m["params"]["item"]["type"] == "commandExecution"
        })
        .await?;
    server
        .request(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await?;
    // Far less than the profile's sleep: the capture no longer holds the turn.
    let completed = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        server.read_turn_completed(&turn_id),
    )
    .await
    .map_err(|_| anyhow::anyhow!("the interrupt waited for the profile capture"))??;
    assert_eq!(completed["turn"]["status"], "interrupted", "{completed}");
    assert!(!world.ws().join("started.txt").exists());
    Ok(())
}
