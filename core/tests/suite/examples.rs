//! The examples an embedder starts from run against the mock model, as built by `cargo test`.

use std::path::PathBuf;
use std::process::Stdio;

use anyhow::Context;
use keel_test_support::{MockModelServer, Turn, assistant_message, function_call, write_config};
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

/// Runs an example with a Keel home pointing at `mock`; its stdout, or the failure with
/// everything it printed.
async fn run_example(name: &str, mock: &MockModelServer, args: &[&str]) -> anyhow::Result<String> {
    let home = tempfile::tempdir()?;
    let workspace = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let program = example(name)?;
    let child = tokio::process::Command::new(&program)
        .args(args)
        .current_dir(workspace.path())
        .env("KEEL_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .with_context(|| format!("{name} did not finish"))??;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "{name} failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(stdout)
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
    let stdout = run_example("custom_tool", &mock, &["Status of KEEL-12?"]).await?;
    assert_eq!(
        stdout.trim(),
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
