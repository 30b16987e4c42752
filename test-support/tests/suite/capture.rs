//! Request capture, invariant checks, the responder hook and script exhaustion.

use std::time::Duration;

use keel_test_support::{
    Endpoint, MockModelServer, Script, Turn, Violation, assistant_message, shell_call,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{WAIT, responses_body, stream};

#[tokio::test]
async fn capture_records_bodies_and_headers_in_order() -> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new(
        (0..3).map(|i| Turn::new([assistant_message(format!("reply {i}"))])),
    ))
    .await?;
    let bodies: Vec<Value> = (0..3)
        .map(|i| responses_body(&format!("message {i}")))
        .collect();
    for body in &bodies {
        stream(&server.uri(), "/responses", body).await?;
    }
    let requests = server.wait_for_requests(3, WAIT).await?;
    let seen: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
    assert_eq!(seen, bodies.iter().collect::<Vec<_>>());
    let indexes: Vec<usize> = requests.iter().map(|r| r.index).collect();
    assert_eq!(indexes, vec![0, 1, 2]);
    for request in &requests {
        assert_eq!(request.endpoint, Endpoint::Responses);
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/responses");
        assert_eq!(request.header("Authorization"), Some("Bearer test-key"));
        assert_eq!(request.header("content-type"), Some("application/json"));
    }
    assert_eq!(server.remaining_turns(), 0);
    server.verify()?;
    Ok(())
}

/// `body` with `items` appended to its `input`.
fn with_input(body: &Value, items: impl IntoIterator<Item = Value>) -> Value {
    let mut body = body.clone();
    if let Some(input) = body["input"].as_array_mut() {
        input.extend(items);
    }
    body
}

#[tokio::test]
async fn tool_outputs_must_name_emitted_calls() -> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new([
        Turn::new([shell_call("call-1", ["true"])]),
        Turn::new([assistant_message("done")]),
        Turn::new([assistant_message("never right")]),
    ]))
    .await?;
    let first = responses_body("go");
    stream(&server.uri(), "/responses", &first).await?;

    let good = with_input(
        &first,
        [
            json!({"type": "function_call", "call_id": "call-1", "name": "shell", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "call-1", "output": "ok"}),
        ],
    );
    stream(&server.uri(), "/responses", &good).await?;
    assert_eq!(server.violations(), vec![]);
    assert_eq!(
        server.requests()[1].tool_output("call-1"),
        Some(&json!("ok"))
    );
    assert_eq!(
        server.requests()[1].tool_names(),
        Vec::<String>::new(),
        "no tools were offered"
    );

    let mut bad = with_input(
        &first,
        [
            json!({"type": "function_call_output", "call_id": "call-9", "output": "??"}),
            json!({"type": "custom_tool_call", "call_id": "call-1", "name": "apply_patch", "input": ""}),
        ],
    );
    bad["stream"] = json!(false);
    stream(&server.uri(), "/responses", &bad).await?;
    assert_eq!(
        server.violations(),
        vec![
            Violation::NotStreaming { request: 2 },
            Violation::UnknownCallId {
                request: 2,
                call_id: "call-9".into()
            },
            Violation::OutputWithoutCall {
                request: 2,
                call_id: "call-9".into()
            },
            Violation::CallWithoutOutput {
                request: 2,
                call_id: "call-1".into()
            },
        ]
    );
    let err = server
        .verify()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("call-9"), "{err}");
    Ok(())
}

#[tokio::test]
async fn exhausted_script_answers_500_and_is_recorded() -> anyhow::Result<()> {
    let server =
        MockModelServer::start(Script::new([Turn::new([assistant_message("only")])])).await?;
    stream(&server.uri(), "/responses", &responses_body("one")).await?;
    let response = tokio::time::timeout(
        WAIT,
        super::common::http()
            .post(format!("{}/responses", server.uri()))
            .json(&responses_body("two"))
            .send(),
    )
    .await??;
    assert_eq!(response.status().as_u16(), 500);
    let body: Value = response.json().await?;
    assert_eq!(body["error"]["code"], json!("script_exhausted"));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("script exhausted"),
        "{body}"
    );
    assert_eq!(
        server.violations(),
        vec![Violation::ScriptExhausted {
            request: 1,
            served: 1
        }]
    );
    Ok(())
}

#[tokio::test]
async fn responder_chooses_and_falls_back_to_the_queue() -> anyhow::Result<()> {
    let server = MockModelServer::builder()
        .turn(Turn::new([assistant_message("from the queue")]))
        .responder(|request| {
            let text = request.body["input"][0]["content"][0]["text"].as_str()?;
            (text == "special").then(|| Turn::new([assistant_message("from the responder")]))
        })
        .start()
        .await?;
    let reply = |outcome: super::common::StreamOutcome| -> String {
        outcome
            .events
            .iter()
            .filter(|e| e.event == "response.output_text.delta")
            .map(|e| e.json()["delta"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let special = stream(&server.uri(), "/responses", &responses_body("special")).await?;
    assert_eq!(reply(special), "from the responder");
    let plain = stream(&server.uri(), "/responses", &responses_body("plain")).await?;
    assert_eq!(reply(plain), "from the queue");
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn unknown_paths_and_invalid_json_are_violations() -> anyhow::Result<()> {
    let server = MockModelServer::builder().start().await?;
    let client = super::common::http();
    let missing =
        tokio::time::timeout(WAIT, client.get(format!("{}/nowhere", server.uri())).send())
            .await??;
    assert_eq!(missing.status().as_u16(), 404);
    let broken = tokio::time::timeout(
        WAIT,
        client
            .post(format!("{}/responses", server.uri()))
            .body("{not json")
            .send(),
    )
    .await??;
    assert_eq!(broken.status().as_u16(), 500, "no turn left for it either");
    let kinds: Vec<String> = server
        .violations()
        .iter()
        .map(|v| {
            serde_json::to_value(v)
                .map(|v| v["type"].to_string())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "\"unknown_endpoint\"",
            "\"invalid_json\"",
            "\"script_exhausted\""
        ]
    );
    Ok(())
}

#[tokio::test]
async fn waiting_for_requests_that_never_come_times_out() -> anyhow::Result<()> {
    let server = MockModelServer::builder().start().await?;
    let err = server
        .wait_for_requests(1, Duration::from_millis(50))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("timed out"), "{err}");
    Ok(())
}
