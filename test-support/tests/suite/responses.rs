//! The Responses stream as a plain SSE client parses it.

use keel_test_support::{
    MockModelServer, Script, Turn, Usage, apply_patch_call, assistant_message, function_call,
    reasoning, shell_call,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{WAIT, responses_body, stream};

#[tokio::test]
async fn responses_stream_yields_the_scripted_items() -> anyhow::Result<()> {
    let usage = Usage {
        input_tokens: 120,
        cached_tokens: 20,
        output_tokens: 30,
        reasoning_tokens: 10,
    };
    let server = MockModelServer::start(Script::new([Turn::new([
        reasoning("Let me look."),
        assistant_message("Hello there, world."),
        function_call("call-1", "update_plan", r#"{"plan":[]}"#),
        shell_call("call-2", ["ls", "-l"]),
        apply_patch_call("call-3", "*** Begin Patch\n*** End Patch\n"),
    ])
    .with_usage(usage)]))
    .await?;

    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    assert_eq!(outcome.error, None);

    // Every frame names its type twice: the SSE `event:` line and the data's `type`.
    for event in &outcome.events {
        assert_eq!(event.json()["type"], json!(event.event));
    }
    let first = outcome.events.first().map(|e| e.event.as_str());
    let last = outcome.events.last().map(|e| e.event.as_str());
    assert_eq!(
        (first, last),
        (Some("response.created"), Some("response.completed"))
    );

    let done: Vec<Value> = outcome
        .events
        .iter()
        .filter(|e| e.event == "response.output_item.done")
        .map(|e| {
            let mut item = e.json()["item"].clone();
            let id = item["id"].as_str().unwrap_or_default().to_string();
            if let Some(object) = item.as_object_mut() {
                object.remove("id");
                // Reasoning carries opaque state named after its item.
                if let Some(encrypted) = object.remove("encrypted_content") {
                    assert_eq!(encrypted, json!(format!("encrypted-{id}")));
                }
            }
            item
        })
        .collect();
    assert_eq!(
        done,
        vec![
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Let me look."}]}),
            json!({"type": "message", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "Hello there, world.", "annotations": []}]}),
            json!({"type": "function_call", "status": "completed", "call_id": "call-1",
                   "name": "update_plan", "arguments": "{\"plan\":[]}"}),
            json!({"type": "function_call", "status": "completed", "call_id": "call-2",
                   "name": "shell", "arguments": "{\"command\":[\"ls\",\"-l\"]}"}),
            json!({"type": "custom_tool_call", "status": "completed", "call_id": "call-3",
                   "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"}),
        ]
    );

    let deltas = |kind: &str| -> String {
        outcome
            .events
            .iter()
            .filter(|e| e.event == kind)
            .map(|e| e.json()["delta"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(deltas("response.output_text.delta"), "Hello there, world.");
    assert_eq!(
        deltas("response.reasoning_summary_text.delta"),
        "Let me look."
    );
    let text_deltas = outcome
        .events
        .iter()
        .filter(|e| e.event == "response.output_text.delta")
        .count();
    assert!(text_deltas > 1, "text should stream in several deltas");

    let completed = outcome
        .events
        .last()
        .map(super::common::Received::json)
        .unwrap_or_default();
    assert_eq!(
        completed["response"]["usage"],
        json!({
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 20},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 150,
        })
    );
    assert_eq!(
        completed["response"]["output"].as_array().map(Vec::len),
        Some(5)
    );
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn responses_are_served_without_the_v1_prefix_too() -> anyhow::Result<()> {
    let server =
        MockModelServer::start(Script::new([Turn::new([assistant_message("ok")])])).await?;
    let base = format!("http://{}", server.addr());
    let outcome = stream(&base, "/responses", &responses_body("hi")).await?;
    assert_eq!(
        outcome.events.last().map(|e| e.event.clone()),
        Some("response.completed".to_owned())
    );
    assert_eq!(
        server.requests().first().map(|r| r.path.clone()),
        Some("/responses".to_owned())
    );
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn models_lists_the_scripted_model() -> anyhow::Result<()> {
    let server = MockModelServer::builder()
        .model("scripted-1")
        .start()
        .await?;
    let listed: Value = tokio::time::timeout(WAIT, async {
        super::common::http()
            .get(format!("{}/models", server.uri()))
            .send()
            .await?
            .json()
            .await
    })
    .await??;
    assert_eq!(listed["data"][0]["id"], json!("scripted-1"));
    assert_eq!(server.requests(), vec![], "/models is not a model request");
    assert_eq!(server.all_requests().len(), 1);
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn usage_is_estimated_when_not_scripted() -> anyhow::Result<()> {
    let server =
        MockModelServer::start(Script::new([Turn::new([assistant_message("12345678")])])).await?;
    let outcome = stream(&server.uri(), "/responses", &responses_body("hi")).await?;
    let completed = outcome
        .events
        .last()
        .map(super::common::Received::json)
        .unwrap_or_default();
    let usage = &completed["response"]["usage"];
    assert_eq!(usage["output_tokens"], json!(2));
    assert!(usage["input_tokens"].as_u64().unwrap_or_default() > 0);
    Ok(())
}
