//! Every command a newcomer copies from the README and the docs' `sh` blocks runs as written:
//! `keel …` lines against the mock model (in the order shown, in one scratch directory, with
//! `keel` on `PATH`), the README's first command offline (its clear error about the missing
//! key), and the exec-server's lines until they serve.
//!
//! Not run here: `docs/benchmarks.md` (measurement recipes that need release builds and the
//! reference Codex), the README's quick start (`quickstart.rs` runs it), `cargo test`
//! (this), and `cargo run --example` lines (`core/tests/suite/examples.rs` runs the examples).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use tokio::io::{AsyncBufReadExt, BufReader};

const WAIT: Duration = Duration::from_secs(60);
const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// One command line of a doc's `sh` block.
struct DocCommand {
    file: String,
    line: usize,
    text: String,
}

/// The command lines of the `sh`/`bash` blocks of `file` (comments cut, blank lines dropped).
fn commands_in(file: &Path) -> anyhow::Result<Vec<DocCommand>> {
    let text = std::fs::read_to_string(file)?;
    let name = file
        .strip_prefix(REPO)
        .unwrap_or(file)
        .display()
        .to_string();
    let mut commands = Vec::new();
    let mut in_block = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_block = !in_block && matches!(fence.trim(), "sh" | "bash");
            continue;
        }
        if !in_block {
            continue;
        }
        let command = match line.find("  #") {
            Some(cut) => &line[..cut],
            None => line,
        }
        .trim();
        if command.is_empty() || command.starts_with('#') {
            continue;
        }
        commands.push(DocCommand {
            file: name.clone(),
            line: index + 1,
            text: command.to_string(),
        });
    }
    Ok(commands)
}

/// The docs a newcomer reads: the README and `docs/*.md` but the benchmark recipes.
fn doc_files() -> anyhow::Result<Vec<PathBuf>> {
    let mut files = vec![Path::new(REPO).join("README.md")];
    for entry in std::fs::read_dir(Path::new(REPO).join("docs"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "md")
            && path.file_name().is_some_and(|name| name != "benchmarks.md")
        {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// A directory holding `keel` and `keel-exec-server` for `PATH`.
fn bin_dir() -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let keel = Path::new(env!("CARGO_BIN_EXE_keel"));
    std::os::unix::fs::symlink(keel, dir.path().join("keel"))?;
    let exec_server = keel.with_file_name("keel-exec-server");
    anyhow::ensure!(
        exec_server.is_file(),
        "{} is missing (built with the workspace)",
        exec_server.display()
    );
    std::os::unix::fs::symlink(&exec_server, dir.path().join("keel-exec-server"))?;
    Ok(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_in_the_readme_and_docs_runs_as_written() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .script(Script::new([Turn::new([assistant_message(
            r#"{"answer":"ok"}"#,
        )])]))
        .repeat(true)
        .start()
        .await?;
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let ws = tempfile::tempdir()?;
    // Files the examples name as the user's own.
    std::fs::write(
        ws.path().join("schema.json"),
        r#"{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}"#,
    )?;
    // A repository with history and uncommitted work, for `keel review`'s examples.
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "first"],
        &["commit", "-q", "--allow-empty", "-m", "second"],
    ] {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=Doc", "-c", "user.email=doc@example.com"])
            .args(args)
            .current_dir(ws.path())
            .status()?;
        anyhow::ensure!(status.success(), "git {args:?}");
    }
    let bin = bin_dir()?;
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for file in doc_files()? {
        for command in commands_in(&file)? {
            let place = format!("{}:{}: {}", command.file, command.line, command.text);
            let first = command.text.split_whitespace().next().unwrap_or_default();
            if let Some(args) = command.text.strip_prefix("cargo run --bin keel -- exec") {
                // The README's first command (the binary cargo would build): offline, on a
                // machine without a Keel home, it must say what to do.
                let fresh = tempfile::tempdir()?;
                let line = format!("{} exec{args}", env!("CARGO_BIN_EXE_keel"));
                let out = run(&line, Path::new(REPO), &path, None, fresh.path()).await?;
                anyhow::ensure!(out.0 == Some(2), "{place}: exit {:?}: {}", out.0, out.2);
                anyhow::ensure!(out.2.contains("missing API key"), "{place}: {}", out.2);
                ran += 1;
            } else if command
                .text
                .split('|')
                .any(|stage| stage.split_whitespace().next() == Some("keel"))
            {
                let out = run(
                    &command.text,
                    ws.path(),
                    &path,
                    Some(home.path()),
                    ws.path(),
                )
                .await?;
                anyhow::ensure!(out.0 == Some(0), "{place}: exit {:?}: {}", out.0, out.2);
                ran += 1;
            } else if first == "keel-exec-server" {
                serves(&command.text, ws.path(), &path)
                    .await
                    .context(place)?;
                ran += 1;
            } else if command.text.starts_with("cargo test")
                || command.text.contains("--example")
                || command.file == "README.md"
            {
                // Run elsewhere (see the module documentation).
            } else {
                anyhow::bail!("{place}: a documented command this test does not know how to check");
            }
        }
    }
    anyhow::ensure!(ran >= 8, "only {ran} documented commands were found");
    Ok(())
}

/// Runs `command` with bash in `cwd`; returns the exit code, stdout and stderr.
async fn run(
    command: &str,
    cwd: &Path,
    path: &str,
    home: Option<&Path>,
    user_home: &Path,
) -> anyhow::Result<(Option<i32>, String, String)> {
    let mut bash = tokio::process::Command::new("bash");
    bash.args(["-c", command])
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("OPENAI_API_KEY")
        .env_remove("CODEX_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    bash.env("HOME", user_home);
    match home {
        Some(home) => bash.env("KEEL_HOME", home),
        // A fresh machine: no Keel home yet (`~/.keel` under an empty HOME).
        None => bash.env_remove("KEEL_HOME"),
    };
    let output = tokio::time::timeout(WAIT, bash.output())
        .await
        .with_context(|| format!("`{command}` did not finish"))??;
    Ok((
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

/// Starts an exec-server line and waits until it serves: a stdio one answers end of input
/// by exiting 0, a websocket one says where it listens.
async fn serves(command: &str, cwd: &Path, path: &str) -> anyhow::Result<()> {
    let mut child = tokio::process::Command::new("bash")
        .args(["-c", &format!("exec {command}")])
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    if command.contains("--listen") {
        let stderr = child.stderr.take().context("stderr")?;
        let mut lines = BufReader::new(stderr).lines();
        tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await? {
                if line.starts_with("listening on ws://127.0.0.1:") {
                    return anyhow::Ok(());
                }
            }
            anyhow::bail!("it exited without listening")
        })
        .await
        .context("it never said where it listens")??;
        child.start_kill()?;
        return Ok(());
    }
    drop(child.stdin.take());
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .context("it did not end at end of input")??;
    anyhow::ensure!(status.success(), "exit {status}");
    Ok(())
}
