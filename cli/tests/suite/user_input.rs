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
/// code mode): the message reaches the client as an agent message at once; the questions as
/// `item/tool/requestUserInput` without holding the turn, and the answers reach the model as a
/// user message whenever they come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asynchronous_messages_and_questions_do_not_hold_the_turn() -> anyhow::Result<()> {
    let mock = MockModelServer::builder()
        .responder(|request| {
            let questions =
                json!({"questions": [{"title": "Which DB?", "options": ["pg", "sqlite"]}]});
            let step = if request.tool_output("m1").is_none() {
                function_call(
                    "m1",
                    "send_message_to_user_async",
                    json!({"message": "HEADS-UP"}).to_string(),
                )
            } else if request.tool_output("q1").is_none() {
                function_call("q1", "request_user_input_async", questions.to_string())
            } else {
                assistant_message("ok")
            };
            Some(Turn::new([step]))
        })
        .start()
        .await?;
    let world = World::with_mock(mock, &[("model", toml::Value::from("gpt-6.2-sol"))])?;
    let mut server = world.server().await?;
    let thread = server.start_thread(world.thread_params()).await?;
    let turn = server.start_turn(&thread, "set up the service").await?;
    let mut heads_up = false;
    let mut asked = None;
    loop {
        let message = server.read_message().await?;
        if message["method"] == "item/completed"
            && message["params"]["item"]["type"] == "agentMessage"
            && message["params"]["item"]["text"] == "HEADS-UP"
        {
            heads_up = true;
        }
        if message["method"] == "item/tool/requestUserInput" {
            let question = &message["params"]["questions"][0];
            assert_eq!(question["question"], "Which DB?");
            assert_eq!(question["options"][0]["label"], "pg");
            asked = Some(message["id"].clone());
        }
        if message["method"] == "turn/completed" && message["params"]["turn"]["id"] == turn {
            break;
        }
    }
    assert!(heads_up, "the message was shown during the turn");
    // The turn ended without the answers; they join the conversation when they come.
    let asked = asked.ok_or_else(|| anyhow::anyhow!("no question reached the client"))?;
    let outputs = world.mock.requests();
    let q1 = outputs
        .iter()
        .find_map(|r| {
            r.tool_output("q1")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default();
    assert!(q1.contains("answers will arrive"), "{q1}");
    server
        .respond(asked, json!({"answers": {"q1": {"answers": ["pg"]}}}))
        .await?;
    let next = server.start_turn(&thread, "go on").await?;
    let completed = server.read_turn_completed(&next).await?;
    assert_eq!(completed["turn"]["status"], "completed");
    let answered = world.mock.requests().iter().any(|request| {
        request.input().iter().any(|item| {
            item["role"] == "user"
                && item
                    .to_string()
                    .contains("<user_answers>\\nQ: Which DB?\\nA: pg")
        })
    });
    assert!(answered, "the answers reached the model");
    Ok(())
}
