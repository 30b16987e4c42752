//! The examples an embedder starts from run against the mock model, as built by `cargo test`.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;
use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, shell_call, write_config,
};
use pretty_assertions::assert_eq;

use super::common::WAIT;

/// The example binary `name`, which `cargo test` builds next to the test binaries.
fn example(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .context("test binary has no target directory")?;
    let path = profile_dir.join("examples").join(name);
    anyhow::ensure!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test` (which builds the examples) or \
         `cargo build -p keel-core --examples` first",
        path.display()
    );
    Ok(path)
}

/// How an example is run: its arguments, extra configuration, what it reads on stdin, and
/// the workspace it runs in.
#[derive(Default)]
struct ExampleInput<'a> {
    args: &'a [&'a str],
    overrides: &'a [(&'a str, &'a str)],
    stdin: &'a str,
    workspace: Option<tempfile::TempDir>,
}

/// What an example printed, and the workspace it ran in.
struct ExampleRun {
    stdout: String,
    stderr: String,
    workspace: tempfile::TempDir,
}

/// Runs an example in a fresh workspace with a Keel home pointing at `mock` (configured with
/// `overrides`) and `stdin` as its input; fails, with everything it printed, unless it
/// exits successfully.
async fn run_example(
    name: &str,
    mock: &MockModelServer,
    input: ExampleInput<'_>,
) -> anyhow::Result<ExampleRun> {
    use tokio::io::AsyncWriteExt;

    let ExampleInput {
        args,
        overrides,
        stdin,
        workspace,
    } = input;
    let home = tempfile::tempdir()?;
    let workspace = match workspace {
        Some(dir) => dir,
        None => tempfile::tempdir()?,
    };
    write_config(home.path(), &mock.uri(), overrides.iter().copied())?;
    let program = example(name)?;
    let mut child = tokio::process::Command::new(&program)
        .args(args)
        .current_dir(workspace.path())
        .env("KEEL_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).await?;
    }
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .with_context(|| format!("{name} did not finish"))??;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "{name} failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    Ok(ExampleRun {
        stdout,
        stderr,
        workspace,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_tool_example_answers_with_the_tools_output() -> anyhow::Result<()> {
    // The model calls the embedder's tool, then answers with what it returned.
    let mock = MockModelServer::builder()
        .responder(|request| {
            let output = request.tool_output("t1")?.as_str()?.to_string();
            Some(Turn::new([assistant_message(format!(
                "Tracker says: {output}"
            ))]))
        })
        .turn(Turn::new([function_call(
            "t1",
            "lookup_ticket",
            r#"{"id":"KEEL-12"}"#,
        )]))
        .start()
        .await?;
    let input = ExampleInput {
        args: &["Status of KEEL-12?"],
        ..ExampleInput::default()
    };
    let run = run_example("custom_tool", &mock, input).await?;
    assert_eq!(
        run.stdout.trim(),
        r#"Tracker says: {"id":"KEEL-12","title":"Tools as traits","status":"in review"}"#
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    // Offered after Keel's own tools, with the schema derived from the argument type.
    let names = requests[0].tool_names();
    assert_eq!(
        names.last().map(String::as_str),
        Some("lookup_ticket"),
        "{names:?}"
    );
    let body = &requests[0].body;
    let spec = body["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "lookup_ticket"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(spec["type"], "function");
    assert_eq!(spec["parameters"]["type"], "object");
    assert_eq!(spec["parameters"]["required"], serde_json::json!(["id"]));
    assert_eq!(spec["parameters"]["properties"]["id"]["type"], "string");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_provider_example_drives_a_turn_without_http() -> anyhow::Result<()> {
    // The example's provider never calls the mock: a mock that fails every request proves it.
    let mock = MockModelServer::start(Script::new([])).await?;
    let workspace = tempfile::tempdir()?;
    for name in ["Cargo.toml", "notes.md"] {
        std::fs::write(workspace.path().join(name), "x")?;
    }
    let input = ExampleInput {
        workspace: Some(workspace),
        ..ExampleInput::default()
    };
    let run = run_example("custom_provider", &mock, input).await?;
    assert_eq!(
        run.stdout.trim(),
        "This directory holds: Cargo.toml, notes.md"
    );
    assert!(run.stderr.contains("$ ls"), "{}", run.stderr);
    assert_eq!(mock.requests().len(), 0);
    Ok(())
}

/// The mock's script for the embed example: write a file with a shell command, then finish.
fn write_a_file() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "echo hi > made.txt"])]),
        Turn::new([assistant_message("done")]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embed_example_asks_its_user_when_the_sandbox_is_missing() -> anyhow::Result<()> {
    // The example binary has no `keel-linux-sandbox` beside it: the sandbox is unavailable,
    // so under `on-request` the embedder's user is asked, and answers yes on stdin.
    let mock = MockModelServer::start(write_a_file()).await?;
    let overrides = [
        ("approval_policy", "on-request"),
        ("sandbox_mode", "workspace-write"),
    ];
    let input = ExampleInput {
        args: &["make a file"],
        overrides: &overrides,
        stdin: "y\n",
        workspace: None,
    };
    let run = run_example("embed", &mock, input).await?;
    assert!(
        run.stderr
            .contains("allow running `bash -lc echo hi > made.txt`?")
            && run.stderr.contains("the sandbox is unavailable"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(run.workspace.path().join("made.txt"))?,
        "hi\n"
    );
    assert_eq!(run.stdout.trim(), "done");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embed_example_hears_why_a_command_was_refused_under_never() -> anyhow::Result<()> {
    let mock = MockModelServer::start(write_a_file()).await?;
    let overrides = [
        ("approval_policy", "never"),
        ("sandbox_mode", "workspace-write"),
    ];
    let input = ExampleInput {
        args: &["make a file"],
        overrides: &overrides,
        ..ExampleInput::default()
    };
    let run = run_example("embed", &mock, input).await?;
    assert!(
        run.stderr.contains(
            "warning: `bash -lc echo hi > made.txt`: command not run: the sandbox is unavailable"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("allow running `bash"),
        "{}",
        run.stderr
    );
    assert!(!run.workspace.path().join("made.txt").exists());
    let told = mock.requests()[1]
        .tool_output("c1")
        .and_then(|o| o.as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(told.contains("command not run"), "{told}");
    Ok(())
}
