//! The built-in tools exactly as the model sees them (names, schemas, descriptions, `strict`),
//! pinned in `cli/tests/golden/tool_specs.json` so a refactor of the tools changes nothing the
//! model reads unless the golden file is updated on purpose: run the test with
//! `KEEL_UPDATE_GOLDEN=1` and explain each change in the commit.

use std::collections::BTreeMap;
use std::path::Path;

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::agents::{job_mock, reporting_worker};
use super::exec::keel_exec;

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/tool_specs.json");

/// The `tools` of a request, in the order sent.
fn tools(body: &Value) -> Value {
    body.get("tools").cloned().unwrap_or(Value::Null)
}

/// Runs `keel exec` once against `mock` with `overrides`, and returns every request's body.
async fn run(
    mock: &MockModelServer,
    overrides: Vec<(&str, toml::Value)>,
    ws: &Path,
) -> anyhow::Result<Vec<Value>> {
    let home = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), overrides)?;
    let out = keel_exec(home.path(), ws, &["go"], None).await?;
    anyhow::ensure!(out.code == Some(0), "keel exec failed: {}", out.stderr);
    Ok(mock
        .requests()
        .into_iter()
        .map(|request| request.body)
        .collect())
}

async fn one_turn(overrides: Vec<(&str, toml::Value)>) -> anyhow::Result<Value> {
    let mock =
        MockModelServer::start(Script::new([Turn::new([assistant_message("done")])])).await?;
    let ws = tempfile::tempdir()?;
    let bodies = run(&mock, overrides, ws.path()).await?;
    let first = bodies
        .first()
        .ok_or_else(|| anyhow::anyhow!("no request reached the mock"))?;
    Ok(tools(first))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_tool_specs_are_what_the_golden_file_pins() -> anyhow::Result<()> {
    let mut seen = BTreeMap::new();

    // Every switch on, on the Responses API: the main agent, and a job worker it starts.
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("rows.csv"), "id,name\n1,ada\n")?;
    let job = json!({"csv_path": "rows.csv", "instruction": "Upper-case {name}"});
    let (mock, _) = job_mock(
        vec![("job", "spawn_agents_on_csv", job)],
        reporting_worker(),
    )
    .await?;
    let bodies = run(
        &mock,
        vec![("tools.web_search", toml::Value::from(true))],
        ws.path(),
    )
    .await?;
    let main = bodies
        .first()
        .ok_or_else(|| anyhow::anyhow!("no request reached the mock"))?;
    seen.insert("responses: main agent, every switch on", tools(main));
    let worker = bodies
        .iter()
        .find(|body| {
            tools(body).as_array().is_some_and(|tools| {
                tools
                    .iter()
                    .any(|tool| tool["name"] == "report_agent_job_result")
            })
        })
        .ok_or_else(|| anyhow::anyhow!("no job worker asked the model"))?;
    seen.insert("responses: job worker", tools(worker));

    seen.insert(
        "responses: unified exec off",
        one_turn(vec![("features.unified_exec", toml::Value::from(false))]).await?,
    );
    seen.insert(
        "responses: gpt-5-codex (freeform apply_patch)",
        one_turn(vec![("model", toml::Value::from("gpt-5-codex"))]).await?,
    );
    seen.insert(
        "chat completions",
        one_turn(vec![(
            "model_providers.mock.wire_api",
            toml::Value::from("chat"),
        )])
        .await?,
    );
    seen.insert(
        "responses: every optional tool off",
        one_turn(vec![
            ("features.multi_agent", toml::Value::from(false)),
            ("features.enable_fanout", toml::Value::from(false)),
            ("features.goals", toml::Value::from(false)),
            ("features.view_image", toml::Value::from(false)),
            ("tools.update_plan.enabled", toml::Value::from(false)),
            (
                "tools.experimental_request_user_input.enabled",
                toml::Value::from(false),
            ),
        ])
        .await?,
    );

    let actual = serde_json::to_string_pretty(&seen)? + "\n";
    if std::env::var_os("KEEL_UPDATE_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &actual)?;
    }
    let golden = std::fs::read_to_string(GOLDEN)?;
    assert_eq!(
        golden, actual,
        "the tools the model sees changed; if on purpose, rerun with KEEL_UPDATE_GOLDEN=1 and \
         explain the change"
    );
    Ok(())
}
