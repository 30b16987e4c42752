//! Chat Completions streams as local servers (Ollama, vLLM, llama.cpp, LM Studio) really send
//! them, replayed by the mock frame by frame through `keel exec`: each must end in the same
//! items as a well-formed stream (the command runs with the right arguments, the text and the
//! reasoning arrive whole).

use keel_test_support::{MockModelServer, Script, Turn, assistant_message, write_config};
use serde_json::{Value, json};

use super::exec::keel_exec;

fn chunk(id: Option<&str>, delta: Value, finish: Option<&str>) -> String {
    let mut chunk = json!({
        "object": "chat.completion.chunk",
        "model": "local",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    if let Some(id) = id {
        chunk["id"] = json!(id);
    }
    chunk.to_string()
}

fn call_fragment(index: Option<u64>, id: Option<&str>, name: Option<&str>, args: Value) -> Value {
    let mut call = json!({"function": {}});
    if let Some(index) = index {
        call["index"] = json!(index);
    }
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    if !args.is_null() {
        call["function"]["arguments"] = args;
    }
    json!({"tool_calls": [call]})
}

/// Runs `keel exec` on the Chat API with `first` as the first reply and a plain answer after;
/// returns the mock and keel's stdout and stderr.
async fn run(first: Vec<String>) -> anyhow::Result<(MockModelServer, String, String)> {
    let mock = MockModelServer::start(Script::new([
        Turn::raw(first),
        Turn::new([assistant_message("all done")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        [
            ("model_providers.mock.wire_api", toml::Value::from("chat")),
            // The recorded streams call `shell`.
            ("features.unified_exec", toml::Value::from(false)),
        ],
    )?;
    let out = keel_exec(home.path(), ws.path(), &["go"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    Ok((mock, out.stdout, out.stderr))
}

/// Every tool output the second request carried, by call id.
fn outputs(mock: &MockModelServer) -> Vec<(String, String)> {
    let requests = mock.requests();
    let Some(second) = requests.get(1) else {
        return Vec::new();
    };
    second
        .input()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_split_over_chunks_id_first_usage_last_no_finish_reason() -> anyhow::Result<()> {
    let frames = vec![
        chunk(Some("c-1"), call_fragment(Some(0), Some("call_a"), Some("shell"), json!("")), None),
        chunk(None, call_fragment(Some(0), None, None, json!("{\"comm")), None),
        chunk(None, call_fragment(Some(0), None, None, json!("and\":[\"ec")), None),
        chunk(None, call_fragment(Some(0), None, None, json!("ho\",\"SPLIT-OK\"]}")), None),
        json!({"id": "c-1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).to_string(),
        "[DONE]".to_string(),
    ];
    let (mock, stdout, stderr) = run(frames).await?;
    assert_eq!(stdout, "all done\n");
    let outputs = outputs(&mock);
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert_eq!(outputs[0].0, "call_a");
    assert!(outputs[0].1.contains("SPLIT-OK"), "{outputs:?}");
    assert!(stderr.contains("tokens used: "), "{stderr}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_interleaved_by_index() -> anyhow::Result<()> {
    let frames = vec![
        chunk(
            Some("c-2"),
            call_fragment(
                Some(0),
                Some("call_x"),
                Some("shell"),
                json!("{\"command\":"),
            ),
            None,
        ),
        chunk(
            None,
            call_fragment(
                Some(1),
                Some("call_y"),
                Some("shell"),
                json!("{\"command\":"),
            ),
            None,
        ),
        chunk(
            None,
            call_fragment(Some(0), None, None, json!("[\"echo\",\"FIRST\"]}")),
            None,
        ),
        chunk(
            None,
            call_fragment(Some(1), None, None, json!("[\"echo\",\"SECOND\"]}")),
            Some("tool_calls"),
        ),
        "[DONE]".to_string(),
    ];
    let (mock, _, _) = run(frames).await?;
    let outputs = outputs(&mock);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_eq!(outputs[0].0, "call_x");
    assert!(outputs[0].1.contains("FIRST"));
    assert_eq!(outputs[1].0, "call_y");
    assert!(outputs[1].1.contains("SECOND"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_without_index_or_id_and_object_arguments() -> anyhow::Result<()> {
    // Whole calls in one chunk each, no `index`, the second without an id, arguments as an
    // object; the stream ends after `finish_reason` without `[DONE]`.
    let frames = vec![
        chunk(
            Some("c-3"),
            call_fragment(
                None,
                Some("call_p"),
                Some("shell"),
                json!({"command": ["echo", "OBJ-ONE"]}),
            ),
            None,
        ),
        chunk(
            None,
            call_fragment(
                None,
                Some("call_q"),
                Some("shell"),
                json!("{\"command\":[\"echo\",\"OBJ-TWO\"]}"),
            ),
            None,
        ),
        chunk(None, json!({}), Some("tool_calls")),
    ];
    let (mock, _, _) = run(frames).await?;
    let outputs = outputs(&mock);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert!(
        outputs[0].1.contains("OBJ-ONE") && outputs[1].1.contains("OBJ-TWO"),
        "{outputs:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_deltas_stream_and_an_id_less_call_gets_one() -> anyhow::Result<()> {
    let frames = vec![
        chunk(
            None,
            json!({"role": "assistant", "reasoning_content": "Thinking about "}),
            None,
        ),
        chunk(None, json!({"reasoning": "the task."}), None),
        chunk(
            None,
            call_fragment(
                Some(0),
                None,
                Some("shell"),
                json!("{\"command\":[\"echo\",\"NO-ID\"]}"),
            ),
            Some("tool_calls"),
        ),
        "[DONE]".to_string(),
    ];
    let (mock, stdout, stderr) = run(frames).await?;
    assert_eq!(stdout, "all done\n");
    assert!(
        stderr.contains("thinking: Thinking about the task."),
        "{stderr}"
    );
    let outputs = outputs(&mock);
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert!(outputs[0].0.starts_with("call_"), "{outputs:?}");
    assert!(outputs[0].1.contains("NO-ID"));
    // The call sent back names the same generated id.
    let second = &mock.requests()[1];
    let assistant = second
        .input()
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .cloned()
        .unwrap_or_default();
    assert_eq!(assistant["tool_calls"][0]["id"], outputs[0].0.as_str());
    Ok(())
}
