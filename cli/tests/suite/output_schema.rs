//! An output schema for a turn: `keel exec --output-schema FILE` and the app-server's
//! `turn/start` `outputSchema` send it to the model as the response format (Responses
//! `text.format`, Chat `response_format`), for that turn only.

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::app_server::common::World;
use super::exec::keel_exec;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "additionalProperties": false
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_exec_sends_the_schema_as_the_response_format() -> anyhow::Result<()> {
    for wire_api in ["responses", "chat"] {
        let mock = MockModelServer::start(Script::new([Turn::new([assistant_message(
            r#"{"title": "Fix the build"}"#,
        )])]))
        .await?;
        let home = tempfile::tempdir()?;
        let ws = tempfile::tempdir()?;
        write_config(
            home.path(),
            &mock.uri(),
            [("model_providers.mock.wire_api", toml::Value::from(wire_api))],
        )?;
        let file = ws.path().join("schema.json");
        std::fs::write(&file, schema().to_string())?;
        let file_arg = file.display().to_string();
        let out = keel_exec(
            home.path(),
            ws.path(),
            &["--output-schema", &file_arg, "name this"],
            None,
        )
        .await?;
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        assert_eq!(out.stdout, "{\"title\": \"Fix the build\"}\n");
        let body = &mock.requests()[0].body;
        let format = match wire_api {
            "responses" => body["text"]["format"].clone(),
            _ => {
                let format = &body["response_format"];
                json!({
                    "type": format["type"],
                    "name": format["json_schema"]["name"],
                    "schema": format["json_schema"]["schema"],
                    "strict": format["json_schema"]["strict"],
                })
            }
        };
        assert_eq!(
            format,
            json!({"type": "json_schema", "name": "codex_output_schema", "schema": schema(), "strict": true}),
            "{wire_api}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_file_that_is_not_a_schema_is_a_usage_error() -> anyhow::Result<()> {
    let mock = MockModelServer::start(Script::new([])).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let file = ws.path().join("schema.json");
    std::fs::write(&file, "[1, 2]")?;
    let file_arg = file.display().to_string();
    let out = keel_exec(
        home.path(),
        ws.path(),
        &["--output-schema", &file_arg, "x"],
        None,
    )
    .await?;
    assert_eq!(out.code, Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("a JSON Schema is an object"),
        "{}",
        out.stderr
    );
    assert!(mock.requests().is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_applies_output_schema_to_that_turn_only() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([assistant_message(r#"{"title": "A title"}"#)]),
        Turn::new([assistant_message("free text")]),
    ]);
    let world = World::new(script, &[]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let first = server
        .request(
            "turn/start",
            json!({
                "threadId": thread,
                "input": [{"type": "text", "text": "title this"}],
                "outputSchema": schema(),
            }),
        )
        .await?;
    let first = first["turn"]["id"].as_str().unwrap_or_default().to_string();
    server.read_turn_completed(&first).await?;
    let second = server.start_turn(&thread, "now talk").await?;
    server.read_turn_completed(&second).await?;
    let requests = world.mock.requests();
    assert_eq!(requests[0].body["text"]["format"]["schema"], schema());
    assert_eq!(requests[1].body["text"]["format"], Value::Null);
    Ok(())
}
