//! The README's quick start, run as written: its two command blocks and its expected output
//! are read from `README.md`, so the walkthrough cannot drift from what works.
//!
//! Two substitutions only: `cargo run ... --` becomes the binary cargo already built, and the
//! mock binds port 0 (the README's 8787 may be taken on a test machine), with the copied
//! example config pointed at the port it got.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use pretty_assertions::assert_eq;
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(60);
const README: &str = include_str!("../../../README.md");
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const QUICKSTART_PORT: &str = "127.0.0.1:8787";

/// The body of the fenced block that follows `<!-- quickstart:NAME -->`.
fn block(name: &str) -> anyhow::Result<String> {
    let marker = format!("<!-- quickstart:{name} -->");
    let after = README
        .split_once(&marker)
        .with_context(|| format!("README.md has no {marker}"))?
        .1;
    let fence_start = after
        .find("```")
        .context("no code block after the marker")?;
    let body = &after[fence_start..];
    let body = &body[body.find('\n').context("unterminated fence")? + 1..];
    let end = body.find("```").context("unterminated code block")?;
    Ok(body[..end].to_string())
}

fn with_binaries(command: &str) -> anyhow::Result<String> {
    let mock = keel_test_support::cargo_bin("keel-mock-model")?;
    Ok(command
        .replace(
            "cargo run -q -p keel-test-support --bin keel-mock-model --",
            &mock.display().to_string(),
        )
        .replace("cargo run -q --bin keel --", env!("CARGO_BIN_EXE_keel")))
}

/// A copy of the files the quick start reads, as a repository root to run it in.
fn quickstart_root(port_address: &str) -> anyhow::Result<tempfile::TempDir> {
    let root = tempfile::tempdir()?;
    let examples = root.path().join("examples/quickstart");
    std::fs::create_dir_all(&examples)?;
    let source = PathBuf::from(REPO).join("examples/quickstart");
    std::fs::copy(source.join("script.json"), examples.join("script.json"))?;
    let config = std::fs::read_to_string(source.join("config.toml"))?;
    anyhow::ensure!(
        config.contains(QUICKSTART_PORT),
        "the example config no longer uses {QUICKSTART_PORT}"
    );
    std::fs::write(
        examples.join("config.toml"),
        config.replace(QUICKSTART_PORT, port_address),
    )?;
    for file in ["Cargo.toml", "README.md"] {
        std::fs::copy(Path::new(REPO).join(file), root.path().join(file))?;
    }
    Ok(root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_quick_start_works_as_written() -> anyhow::Result<()> {
    let mock_command = block("mock")?;
    anyhow::ensure!(mock_command.contains(QUICKSTART_PORT), "{mock_command}");
    let mock_command = with_binaries(&mock_command)?.replace(QUICKSTART_PORT, "127.0.0.1:0");

    // The mock serves the repository's script; the copy of the config is pointed at its port.
    let staging = tempfile::tempdir()?;
    let mut mock = tokio::process::Command::new("bash")
        .args(["-c", &format!("exec {mock_command}")])
        .current_dir(REPO)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = mock.stdout.take().context("mock stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let uri = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .context("the mock did not print its address")??
        .context("the mock exited before printing its address")?;
    let address = uri
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    let root = quickstart_root(&address)?;

    // Twice: `--repeat` must serve a second run of the same script.
    for run in 0..2 {
        let keel_commands = with_binaries(&block("keel")?)?;
        let output = tokio::time::timeout(
            WAIT,
            tokio::process::Command::new("bash")
                .args(["-euo", "pipefail", "-c", &keel_commands])
                .current_dir(root.path())
                .env("TMPDIR", staging.path())
                .env_remove("KEEL_HOME")
                .env_remove("RUST_LOG")
                .env_remove("KEEL_LOG")
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .context("the quick start's keel exec did not finish")??;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "run {run}: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            block("expected")?,
            "run {run}: {stderr}"
        );
        assert!(
            stderr.contains("$ bash -lc 'ls Cargo.toml README.md'"),
            "run {run}: {stderr}"
        );
    }
    Ok(())
}
