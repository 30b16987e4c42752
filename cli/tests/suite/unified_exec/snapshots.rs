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
