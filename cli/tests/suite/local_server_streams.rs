//! A session against each local server's stream, as that server sends it (hand-built from its
//! documented wire format and published recordings: `test-support/fixtures/local-servers/`,
//! whose README names the sources): the tool call it streams runs, and the turn goes on to
//! the final answer. Ollama's Responses stream is replayed on the Responses wire, the others
//! on Chat Completions.

use std::path::PathBuf;

use anyhow::Context;
use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde::Deserialize;

use super::exec::keel_exec;

#[derive(Deserialize)]
struct Fixture {
    server: String,
    wire: String,
    #[serde(default)]
    comments_before_first_frame: Vec<String>,
    frames: Vec<String>,
}

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-support/fixtures/local-servers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_local_servers_tool_call_stream_runs_end_to_end() -> anyhow::Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "fixtures missing: {files:?}");
    let mut wires = std::collections::BTreeSet::new();
    for file in files {
        let fixture: Fixture = serde_json::from_str(&std::fs::read_to_string(&file)?)
            .with_context(|| file.display().to_string())?;
        wires.insert(fixture.wire.clone());
        let marker = format!(
            "FIXTURE-{}",
            match file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
            {
                stem if stem.starts_with("ollama") => "OLLAMA",
                stem if stem.starts_with("vllm") => "VLLM",
                stem if stem.starts_with("llamacpp") => "LLAMACPP",
                stem if stem.starts_with("lmstudio") => "LMSTUDIO",
                stem if stem.starts_with("openrouter") => "OPENROUTER",
                other => anyhow::bail!("a fixture of an unknown server: {other}"),
            }
        );
        let mut frames = fixture.comments_before_first_frame.clone();
        frames.extend(fixture.frames.clone());
        let mock = MockModelServer::start(Script::new([
            Turn::raw(frames),
            Turn::new([assistant_message("all done")]),
        ]))
        .await?;
        let home = tempfile::tempdir()?;
        let ws = tempfile::tempdir()?;
        let wire = if fixture.wire == "responses" {
            "responses"
        } else {
            "chat"
        };
        write_config(
            home.path(),
            &mock.uri(),
            [
                ("model_providers.mock.wire_api", toml::Value::from(wire)),
                ("features.unified_exec", toml::Value::from(false)),
            ],
        )?;
        let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
        assert_eq!(out.code, Some(0), "{}: {}", fixture.server, out.stderr);
        assert_eq!(
            out.stdout, "all done\n",
            "{}: {}",
            fixture.server, out.stderr
        );
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{}", fixture.server);
        let outputs: Vec<String> = requests[1]
            .tool_output_call_ids()
            .iter()
            .filter_map(|id| requests[1].tool_output(id))
            .map(|output| {
                output
                    .as_str()
                    .map_or_else(|| output.to_string(), str::to_string)
            })
            .collect();
        assert_eq!(outputs.len(), 1, "{}: {outputs:?}", fixture.server);
        assert!(
            outputs[0].contains(&marker),
            "{}: the command did not run as streamed: {outputs:?}",
            fixture.server
        );
    }
    assert_eq!(wires.len(), 2, "both wires are covered: {wires:?}");
    Ok(())
}
