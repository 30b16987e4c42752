//! The Chat Completions stream shape.

use keel_test_support::{
    Fault, MockModelServer, Script, Turn, apply_patch_call, assistant_message, reasoning,
    shell_call,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::stream;

fn chat_body() -> Value {
    json!({"model": "mock-model", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn chat_stream_has_content_tool_calls_finish_reason_and_done() -> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new([Turn::new([
        reasoning("Think."),
        assistant_message("Running it now."),
        shell_call("call-1", ["echo", "hi"]),
        apply_patch_call("call-2", "*** Begin Patch\n*** End Patch\n"),
    ])]))
    .await?;
    let outcome = stream(&server.uri(), "/chat/completions", &chat_body()).await?;
    assert_eq!(outcome.error, None);
    assert!(
        outcome.events.iter().all(|e| e.event == "message"),
        "chat frames carry no `event:`"
    );
    assert_eq!(
        outcome.events.last().map(|e| e.data.as_str()),
        Some("[DONE]")
    );

    let chunks: Vec<Value> = outcome
        .events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(super::common::Received::json)
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == json!("chat.completion.chunk"))
    );
    let delta_text = |key: &str| -> String {
        chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"][key].as_str())
            .collect()
    };
    assert_eq!(delta_text("content"), "Running it now.");
    assert_eq!(delta_text("reasoning"), "Think.");

    // Reassemble tool calls the way a client does: by index, concatenating arguments.
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for chunk in &chunks {
        let Some(fragments) = chunk["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for fragment in fragments {
            let index = usize::try_from(fragment["index"].as_u64().unwrap_or_default())?;
            if calls.len() <= index {
                calls.resize(index + 1, Default::default());
            }
            let call = &mut calls[index];
            if let Some(id) = fragment["id"].as_str() {
                call.0 = id.to_owned();
            }
            if let Some(name) = fragment["function"]["name"].as_str() {
                call.1 = name.to_owned();
            }
            call.2.push_str(
                fragment["function"]["arguments"]
                    .as_str()
                    .unwrap_or_default(),
            );
        }
    }
    assert_eq!(
        calls,
        vec![
            (
                "call-1".into(),
                "shell".into(),
                r#"{"command":["echo","hi"]}"#.into()
            ),
            (
                "call-2".into(),
                "apply_patch".into(),
                json!({"input": "*** Begin Patch\n*** End Patch\n"}).to_string()
            ),
        ]
    );
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|r| !r.is_null())
        .collect();
    assert_eq!(finish, vec![&json!("tool_calls")]);
    let usage = chunks
        .iter()
        .find_map(|c| c.get("usage"))
        .cloned()
        .unwrap_or_default();
    assert!(usage["total_tokens"].as_u64().unwrap_or_default() > 0);
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn chat_text_only_finishes_with_stop_and_end_without_completed_drops_done()
-> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new([
        Turn::new([assistant_message("plain")]),
        Turn::new([assistant_message("cut")]).with_fault(Fault::EndWithoutCompleted),
    ]))
    .await?;
    let whole = stream(&server.uri(), "/chat/completions", &chat_body()).await?;
    let reasons: Vec<Value> = whole
        .events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json()["choices"][0]["finish_reason"].clone())
        .filter(|r| !r.is_null())
        .collect();
    assert_eq!(reasons, vec![json!("stop")]);

    let cut = stream(&server.uri(), "/chat/completions", &chat_body()).await?;
    assert_eq!(cut.error, None);
    assert!(cut.events.iter().all(|e| e.data != "[DONE]"));
    server.verify()?;
    Ok(())
}

#[tokio::test]
async fn chat_tool_outputs_are_checked_against_emitted_calls() -> anyhow::Result<()> {
    let server = MockModelServer::start(Script::new([
        Turn::new([shell_call("call-1", ["true"])]),
        Turn::new([assistant_message("done")]),
    ]))
    .await?;
    stream(&server.uri(), "/chat/completions", &chat_body()).await?;
    let follow_up = json!({"model": "mock-model", "stream": true, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call-1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call-1", "content": "ok"},
    ]});
    stream(&server.uri(), "/chat/completions", &follow_up).await?;
    let requests = server.requests();
    assert_eq!(
        requests[1].tool_output_call_ids(),
        vec!["call-1".to_owned()]
    );
    assert_eq!(requests[1].tool_output("call-1"), Some(&json!("ok")));
    server.verify()?;
    Ok(())
}
