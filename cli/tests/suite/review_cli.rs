//! `keel review` as a CI job runs it: the report on stdout and an exit code that says whether
//! the reviewer judged the patch incorrect; a target that names nothing is a usage error and
//! the model is never asked.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde_json::json;

use super::app_server::review::{repository, review_json};

const WAIT: Duration = Duration::from_secs(60);

async fn keel_review(home: &Path, cwd: &Path, args: &[&str]) -> anyhow::Result<Output> {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .arg("review")
        .args(args)
        .current_dir(cwd)
        .env("KEEL_HOME", home)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    Ok(tokio::time::timeout(WAIT, child.wait_with_output()).await??)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verdict_decides_the_exit_code() -> anyhow::Result<()> {
    let repo = tempfile::tempdir()?;
    repository(repo.path())?;
    let correct = json!({
        "findings": [],
        "overall_correctness": "patch is correct",
        "overall_explanation": "Nothing stands in the way.",
        "overall_confidence_score": 0.9
    })
    .to_string();
    let mock = MockModelServer::start(Script::new([
        Turn::new([assistant_message(review_json(&repo.path().join("lib.rs")))]),
        Turn::new([assistant_message(correct)]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;

    let output = keel_review(home.path(), repo.path(), &["--base", "main"]).await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    anyhow::ensure!(output.status.code() == Some(3), "{stdout}\n{stderr}");
    anyhow::ensure!(
        stdout.starts_with("Verdict: patch is incorrect.")
            && stdout.contains("[P1] one() returns 2")
            && stdout.contains("lib.rs:1"),
        "{stdout}"
    );
    // Read-only: the reviewer's request says so.
    let requests = mock.requests();
    let sent = serde_json::to_string(requests[0].input())?;
    anyhow::ensure!(sent.contains("read-only"), "{sent}");

    let output = keel_review(home.path(), repo.path(), &["--uncommitted"]).await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.code() == Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    anyhow::ensure!(
        stdout.trim() == "Verdict: patch is correct. Nothing stands in the way.",
        "{stdout}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_names_nothing_is_a_usage_error() -> anyhow::Result<()> {
    let repo = tempfile::tempdir()?;
    repository(repo.path())?;
    let plain = tempfile::tempdir()?;
    let mock = MockModelServer::start(Script::new(Vec::<Turn>::new())).await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let cases: [(&Path, &[&str], &str); 5] = [
        (
            repo.path(),
            &["--base", "nope"],
            "branch 'nope' does not exist",
        ),
        (
            repo.path(),
            &["--commit", "deadbeef"],
            "commit 'deadbeef' does not exist",
        ),
        (
            plain.path(),
            &["--uncommitted"],
            "is not in a git repository",
        ),
        (repo.path(), &[], "nothing to review"),
        (
            repo.path(),
            &["--uncommitted", "--base", "main"],
            "cannot be used with",
        ),
    ];
    for (dir, args, expected) in cases {
        let output = keel_review(home.path(), dir, args).await?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        anyhow::ensure!(output.status.code() == Some(2), "{args:?}: {stderr}");
        anyhow::ensure!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    anyhow::ensure!(mock.requests().is_empty(), "the model was asked");
    Ok(())
}
