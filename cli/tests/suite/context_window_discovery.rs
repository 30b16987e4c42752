//! A local or self-hosted model's context window is asked of its server (Ollama's
//! `/api/show`, the `GET /models` fields of vLLM and gateways) when config and Keel's model
//! table do not know it, and sizes auto-compaction: the session is summarised before the
//! window fills, instead of the server cutting its history.

use keel_test_support::{
    MockModelServer, Script, Turn, Usage, assistant_message, shell_call, write_config,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::exec::keel_exec;

/// 950 tokens: over 90% of a 1,000-token window, far under any model Keel knows.
const NEAR_FULL: Usage = Usage {
    input_tokens: 900,
    cached_tokens: 0,
    output_tokens: 50,
    reasoning_tokens: 0,
};
const LIGHT: Usage = Usage {
    input_tokens: 40,
    cached_tokens: 0,
    output_tokens: 5,
    reasoning_tokens: 0,
};

/// A turn that fills the window, the summary, the answer.
fn filling_script() -> Script {
    Script::new([
        Turn::new([shell_call("c1", ["echo", "BULKY-OUTPUT"])]).with_usage(NEAR_FULL),
        Turn::new([assistant_message("SUMMARY: ran echo")]).with_usage(LIGHT),
        Turn::new([assistant_message("done")]).with_usage(LIGHT),
    ])
}

async fn run(mock: &MockModelServer, extra: &[(&str, toml::Value)]) -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), extra.iter().cloned())?;
    let out = keel_exec(home.path(), ws.path(), &["do the work"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    Ok(())
}

/// The second model request is the summary request: the history, Keel's hand-off prompt.
fn compacted(mock: &MockModelServer) -> bool {
    mock.requests().get(1).is_some_and(|request| {
        let text = serde_json::to_string(request.input()).unwrap_or_default();
        text.contains("BULKY-OUTPUT") && text.contains("hand-off note")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_listed_by_the_server_triggers_compaction() -> anyhow::Result<()> {
    // vLLM lists `max_model_len` with each model.
    let mock = MockModelServer::builder()
        .script(filling_script())
        .model_list_fields(json!({"max_model_len": 1000}))
        .start()
        .await?;
    run(&mock, &[]).await?;
    assert!(compacted(&mock), "no compaction before the window filled");
    let asked = mock
        .all_requests()
        .iter()
        .filter(|request| request.path.ends_with("/models"))
        .count();
    assert_eq!(asked, 1, "asked once per conversation start");
    mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_says_the_window_it_runs_with() -> anyhow::Result<()> {
    // An Ollama provider: `/api/show` wins over the trained length.
    let mock = MockModelServer::builder()
        .script(filling_script())
        .ollama_show(json!({
            "parameters": "num_ctx 1000",
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
        }))
        .start()
        .await?;
    run(
        &mock,
        &[
            ("model_provider", "ollama".into()),
            ("model_providers.ollama.base_url", mock.uri().into()),
            ("model_providers.ollama.wire_api", "chat".into()),
        ],
    )
    .await?;
    assert!(compacted(&mock), "no compaction before the window filled");
    let show = mock
        .all_requests()
        .into_iter()
        .find(|request| request.path == "/api/show");
    assert_eq!(
        show.map(|request| request.body),
        Some(json!({"model": "mock-model"}))
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_window_wins_and_a_silent_server_changes_nothing() -> anyhow::Result<()> {
    // The server says 1,000 but config says 100,000: no compaction.
    let mock = MockModelServer::builder()
        .script(Script::new([
            Turn::new([shell_call("c1", ["echo", "BULKY-OUTPUT"])]).with_usage(NEAR_FULL),
            Turn::new([assistant_message("done")]).with_usage(LIGHT),
        ]))
        .model_list_fields(json!({"max_model_len": 1000}))
        .start()
        .await?;
    run(&mock, &[("model_context_window", 100_000.into())]).await?;
    assert_eq!(mock.requests().len(), 2);
    assert!(
        !mock
            .all_requests()
            .iter()
            .any(|r| r.path.ends_with("/models")),
        "a configured window needs no question"
    );

    // A server that lists no window: nothing is compacted, the run is unchanged.
    let mock = MockModelServer::start(Script::new([
        Turn::new([shell_call("c1", ["echo", "BULKY-OUTPUT"])]).with_usage(NEAR_FULL),
        Turn::new([assistant_message("done")]).with_usage(LIGHT),
    ]))
    .await?;
    run(&mock, &[]).await?;
    assert_eq!(mock.requests().len(), 2);
    mock.verify()?;
    Ok(())
}
