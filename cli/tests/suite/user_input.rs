//! `request_user_input`: on the app-server the model's questions reach the client as
//! `item/tool/requestUserInput` and its answers go back to the model; `keel exec`, with no
//! user, tells the model nobody answered and the turn goes on.

use keel_test_support::{
    MockModelServer, Script, Turn, assistant_message, function_call, write_config,
};
use serde_json::{Value, json};

use super::app_server::common::World;
use super::exec::keel_exec;

fn script() -> Script {
    let questions = json!({"questions": [{
        "id": "lang",
        "header": "Language",
        "question": "Which language should the tool be written in?",
        "options": [
            {"label": "Rust", "description": "fast, one binary"},
            {"label": "Python", "description": "quick to write"}
        ]
    }]});
    Script::new([
        Turn::new([function_call(
            "ask-1",
            "request_user_input",
            questions.to_string(),
        )]),
        Turn::new([assistant_message("noted")]),
    ])
}

fn answer_sent(mock: &MockModelServer) -> Value {
    mock.requests()
        .get(1)
        .and_then(|r| {
            r.tool_output("ask-1")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_asks_the_client_and_returns_its_answers() -> anyhow::Result<()> {
    let world = World::new(script(), &[]).await?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "build a tool").await?;
    let request = server.read_server_request().await?;
    assert_eq!(request["method"], "item/tool/requestUserInput");
    let params = &request["params"];
    assert_eq!(params["threadId"], thread.as_str());
    assert_eq!(params["turnId"], turn.as_str());
    assert_eq!(params["itemId"], "ask-1");
    assert_eq!(params["questions"][0]["id"], "lang");
    assert_eq!(params["questions"][0]["options"][1]["label"], "Python");
    server
        .respond(
            request["id"].clone(),
            json!({"answers": {"lang": {"answers": ["Rust"]}}}),
        )
        .await?;
    let completed = server.read_turn_completed(&turn).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    assert_eq!(
        answer_sent(&world.mock),
        json!({"answers": {"lang": {"answers": ["Rust"]}}})
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_exec_tells_the_model_nobody_answered() -> anyhow::Result<()> {
    let mock = MockModelServer::start(script()).await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(home.path(), &mock.uri(), Vec::<(&str, toml::Value)>::new())?;
    let out = keel_exec(home.path(), ws.path(), &["build a tool"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "noted\n");
    assert!(
        out.stderr
            .contains("the model asked: Which language should the tool be written in?"),
        "{}",
        out.stderr
    );
    let sent = answer_sent(&mock);
    assert_eq!(sent["answers"], json!({}), "{sent}");
    assert!(
        sent["note"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer"),
        "{sent}"
    );
    Ok(())
}

/// `send_message_to_user_async` and `request_user_input_async` (offered to `gpt-6.2-sol` in
/// code mode): both show their text to the client at once as agent messages (the questions
/// with their options as `- option` lines), answer `{"accepted":true}`, and the turn goes on;
/// bad arguments are refused in Codex's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asynchronous_messages_and_questions_do_not_hold_the_turn() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let steps = [
                (
                    "m1",
                    "send_message_to_user_async",
                    json!({"message": "HEADS-UP"}),
                ),
                (
                    "q1",
                    "request_user_input_async",
                    json!({"questions": [
                        {"title": "Which DB?", "options": ["pg", "sqlite"]},
                        {"title": "Anything else?"}
                    ]}),
                ),
                ("e1", "request_user_input_async", json!({"questions": []})),
                ("e2", "send_message_to_user_async", json!({"message": ""})),
            ];
            let step = steps
                .into_iter()
                .find(|(call_id, _, _)| request.tool_output(call_id).is_none())
                .map_or_else(
                    || assistant_message("ok"),
                    |(call_id, tool, args)| function_call(call_id, tool, args.to_string()),
                );
            Some(Turn::new([step]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[("model", toml::Value::from("gpt-6.2-sol"))])?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "set up the service").await?;
    let mut shown = Vec::new();
    let mut asked = Value::Null;
    loop {
        let message = server.read_message().await?;
        assert_ne!(
            message["method"], "item/tool/requestUserInput",
            "no question holds the turn"
        );
        if message["method"] == "item/completed"
            && message["params"]["item"]["type"] == "agentMessage"
        {
            let item = &message["params"]["item"];
            shown.push(item["text"].clone());
            if item["id"] == "q1" {
                asked = item.clone();
            }
        }
        if message["method"] == "turn/completed" && message["params"]["turn"]["id"] == turn {
            assert_eq!(message["params"]["turn"]["status"], "completed");
            break;
        }
    }
    assert_eq!(
        shown,
        [
            json!("HEADS-UP"),
            json!("Which DB?\n- pg\n- sqlite\n\nAnything else?"),
            json!("ok")
        ]
    );
    // As Codex 0.171 shows them: the call's id, delivered asynchronously, with the questions.
    assert_eq!(asked["delivery"], "async");
    assert_eq!(asked["phase"], "final_answer");
    assert_eq!(
        asked["questions"],
        json!([
            {"title": "Which DB?", "options": ["pg", "sqlite"]},
            {"title": "Anything else?", "options": null}
        ])
    );
    let output = |call_id: &str| {
        world
            .mock
            .requests()
            .iter()
            .find_map(|r| {
                r.tool_output(call_id)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default()
    };
    assert_eq!(output("m1"), r#"{"accepted":true}"#);
    assert_eq!(output("q1"), r#"{"accepted":true}"#);
    assert_eq!(output("e1"), "questions must not be empty");
    assert_eq!(output("e2"), "message must not be empty");
    Ok(())
}
