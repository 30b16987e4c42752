//! Reasoning models through `keel exec` and the app-server against the mock: the request asks
//! for reasoning (effort, summary) and its encrypted state for the families that reason, and
//! not for the others; the encrypted reasoning goes back with the next request of the turn;
//! summaries stream to clients part by part.

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, reasoning, shell_call, write_config,
};
use serde_json::{Value, json};

use super::app_server::common::{World, until_turn_completed};
use super::exec::keel_exec;

fn script() -> Script {
    Script::new([
        Turn::new([
            reasoning("Plan: echo first"),
            shell_call("c1", ["echo", "hi"]),
        ]),
        Turn::new([assistant_message("done")]),
    ])
}

async fn run(
    model: &str,
    overrides: &[(&str, toml::Value)],
) -> anyhow::Result<(MockModelServer, String)> {
    let mock = MockModelServer::start(script()).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), overrides.iter().cloned())?;
    let out = keel_exec(home.path(), ws.path(), &["-m", model, "say hi"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    Ok((mock, out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reasoning_model_gets_reasoning_and_its_encrypted_state_back() -> anyhow::Result<()> {
    let (mock, stderr) = run("gpt-5-codex", &[]).await?;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(
        first["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(first["store"], false);
    assert_eq!(first["parallel_tool_calls"], true);
    assert!(
        first.get("text").is_none(),
        "gpt-5-codex takes no verbosity"
    );

    // The reasoning item comes back unchanged, encrypted state included, before the call.
    let input = requests[1].input();
    let position = |kind: &str| input.iter().position(|item| item["type"] == kind);
    let reasoning_at = position("reasoning").ok_or_else(|| anyhow::anyhow!("{input:?}"))?;
    let call_at = position("function_call").ok_or_else(|| anyhow::anyhow!("{input:?}"))?;
    assert!(reasoning_at < call_at);
    let item = &input[reasoning_at];
    let id = item["id"].as_str().unwrap_or_default();
    assert_eq!(item["encrypted_content"], format!("encrypted-{id}"));
    assert_eq!(item["summary"][0]["text"], "Plan: echo first");
    // keel exec shows the summary.
    assert!(stderr.contains("thinking: Plan: echo first"), "{stderr}");
    mock.verify()?;
    Ok(())
}

/// Open-weight gpt-oss models reason: on the Responses wire they get a summary and their
/// encrypted reasoning back (no effort unless one is configured), under any vendor prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpt_oss_on_responses_gets_reasoning_settings() -> anyhow::Result<()> {
    for model in ["gpt-oss:20b", "openai/gpt-oss-120b"] {
        let (mock, _) = run(model, &[]).await?;
        let first = &mock.requests()[0].body;
        assert_eq!(first["reasoning"], json!({"summary": "auto"}), "{model}");
        assert_eq!(
            first["include"],
            json!(["reasoning.encrypted_content"]),
            "{model}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_reason_gets_no_reasoning_fields() -> anyhow::Result<()> {
    let (mock, _) = run("gpt-4o", &[("model_verbosity", "low".into())]).await?;
    // The family's default command tool is `shell`.
    let tools = mock.requests()[0].tool_names();
    assert!(
        tools.contains(&"shell".to_string()) && !tools.contains(&"exec_command".to_string()),
        "{tools:?}"
    );
    for request in mock.requests() {
        for field in ["reasoning", "include", "text"] {
            assert!(
                request.body.get(field).is_none(),
                "{field}: {}",
                request.body
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_effort_summary_and_verbosity_are_sent() -> anyhow::Result<()> {
    let (mock, _) = run(
        "gpt-5",
        &[
            ("model_reasoning_effort", "high".into()),
            ("model_reasoning_summary", "detailed".into()),
            ("model_verbosity", "low".into()),
        ],
    )
    .await?;
    let body = &mock.requests()[0].body;
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "detailed"})
    );
    assert_eq!(body["text"], json!({"verbosity": "low"}));

    // An unknown model is taken at its word: told it reasons, it is asked to.
    let (mock, _) = run(
        "my-local-reasoner",
        &[
            ("model_supports_reasoning_summaries", true.into()),
            ("model_reasoning_summary", "none".into()),
        ],
    )
    .await?;
    let body = &mock.requests()[0].body;
    assert_eq!(body["reasoning"], json!({}));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_streams_summary_parts() -> anyhow::Result<()> {
    let world = World::new(script(), &[("model", "gpt-5-codex".into())]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "say hi").await?;
    let messages = until_turn_completed(&mut server, &turn).await?;
    let of = |method: &str| -> Vec<&Value> {
        messages.iter().filter(|m| m["method"] == method).collect()
    };
    let parts = of("item/reasoning/summaryPartAdded");
    assert_eq!(parts.len(), 1, "{messages:?}");
    let item_id = parts[0]["params"]["itemId"].clone();
    assert_eq!(parts[0]["params"]["summaryIndex"], 0);
    assert_eq!(parts[0]["params"]["threadId"], thread.as_str());
    let deltas = of("item/reasoning/summaryTextDelta");
    assert!(!deltas.is_empty());
    let text: String = deltas
        .iter()
        .map(|d| {
            assert_eq!(d["params"]["itemId"], item_id);
            d["params"]["delta"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(text, "Plan: echo first");
    assert!(of("item/completed").iter().any(|m| {
        m["params"]["item"]["type"] == "reasoning"
            && m["params"]["item"]["summary"] == json!(["Plan: echo first"])
    }));
    Ok(())
}

/// Efforts are an open set (`max`, a name Keel never saw): sent as named; `ultra` is sent as
/// `xhigh` to a catalogued model and `medium` to any other, as Codex 0.171 sends it; an empty
/// effort is refused before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efforts_are_an_open_set() -> anyhow::Result<()> {
    for (model, effort, sent) in [
        ("gpt-5.5", "max", "max"),
        ("gpt-5.5", "turbo", "turbo"),
        ("gpt-5.5", "ultra", "xhigh"),
        ("gpt-5-codex", "ultra", "medium"),
    ] {
        let (mock, _) = run(
            model,
            &[("model_reasoning_effort", toml::Value::from(effort))],
        )
        .await?;
        let first = &mock.requests()[0].body;
        assert_eq!(first["reasoning"]["effort"], sent, "{model} {effort}");
    }
    let mock = MockModelServer::start(script()).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [("model_reasoning_effort", toml::Value::from(""))],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["say hi"], None).await?;
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("reasoning_effort must not be empty"),
        "{}",
        out.stderr
    );
    assert!(mock.requests().is_empty());
    Ok(())
}
