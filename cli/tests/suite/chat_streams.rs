//! Chat Completions streams as local servers (Ollama, vLLM, llama.cpp, LM Studio) really send
//! them, replayed by the mock frame by frame through `keel exec`: each must end in the same
//! items as a well-formed stream (the command runs with the right arguments, the text and the
//! reasoning arrive whole).

use std::time::Duration;

use keel_test_support::{Fault, MockModelServer, Script, Turn, assistant_message, write_config};
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
    run_turn(Turn::raw(first)).await
}

/// [`run`] with the first reply as a whole turn (a raw one with a fault, say).
async fn run_turn(first: Turn) -> anyhow::Result<(MockModelServer, String, String)> {
    let mock = MockModelServer::start(Script::new([
        first,
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
            // Only the stream's own end may finish an answer, never the idle timeout.
            (
                "model_providers.mock.stream_idle_timeout_ms",
                toml::Value::from(600_000),
            ),
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

    // Replayed in the form strict chat templates take: roles alternate (only `tool` repeats),
    // and both calls sit in one assistant message, followed by one tool message each.
    let requests = mock.requests();
    let messages = requests[1].input();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert!(
        roles
            .windows(2)
            .all(|pair| pair[0] != pair[1] || pair[0] == "tool"),
        "{roles:?}"
    );
    assert_eq!(roles[roles.len() - 3..], ["assistant", "tool", "tool"]);
    let calls = messages[roles.len() - 3]["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(ids, ["call_x", "call_y"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_reused_with_a_new_id_is_a_new_call() -> anyhow::Result<()> {
    let frames = vec![
        chunk(
            Some("c-5"),
            call_fragment(
                Some(0),
                Some("call_one"),
                Some("shell"),
                json!("{\"command\":[\"echo\",\"ONE\"]}"),
            ),
            None,
        ),
        chunk(
            None,
            call_fragment(
                Some(0),
                Some("call_two"),
                Some("shell"),
                json!("{\"command\":[\"echo\",\"TWO\"]}"),
            ),
            Some("tool_calls"),
        ),
        "[DONE]".to_string(),
    ];
    let (mock, _, _) = run(frames).await?;
    let outputs = outputs(&mock);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert_eq!(outputs[0].0, "call_one");
    assert!(outputs[0].1.contains("ONE"), "{outputs:?}");
    assert_eq!(outputs[1].0, "call_two");
    assert!(outputs[1].1.contains("TWO"), "{outputs:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finish_reason_ends_the_answer_though_the_stream_stays_open() -> anyhow::Result<()> {
    let frames = vec![
        chunk(Some("c-6"), json!({"content": "open-ended answer"}), None),
        chunk(None, json!({}), Some("stop")),
    ];
    // The server sends nothing more (no usage, no `[DONE]`) and keeps the connection open.
    let turn = Turn::raw(frames).with_fault(Fault::stall_after(2, Duration::from_secs(600)));
    let (_, stdout, stderr) = run_turn(turn).await?;
    assert_eq!(stdout, "open-ended answer\n", "{stderr}");
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

/// A small local model that writes its call as text (Hermes-style `<tool_call>`) instead of
/// making it: the call of an offered tool runs, and the turn goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_written_as_text_runs() -> anyhow::Result<()> {
    let text = "<tool_call>\n{\"name\": \"shell\", \"arguments\": {\"command\": [\"echo\", \"TEXT-CALL\"]}}\n</tool_call>";
    let frames = vec![
        chunk(Some("c-7"), json!({"content": text}), None),
        chunk(None, json!({}), Some("stop")),
        "[DONE]".to_string(),
    ];
    let (mock, stdout, stderr) = run(frames).await?;
    assert_eq!(stdout, "all done\n", "{stderr}");
    let outputs = outputs(&mock);
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert!(outputs[0].1.contains("TEXT-CALL"), "{outputs:?}");
    Ok(())
}

/// DeepSeek's thinking mode refuses a tool step of the running turn without its reasoning: the
/// reasoning streamed before a call goes back as `reasoning_content` on that call's message
/// (for DeepSeek models by default, for others when `chat_reasoning_field` says so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_goes_back_with_the_call_where_the_provider_wants_it() -> anyhow::Result<()> {
    for (model, field) in [("deepseek-reasoner", None), ("qwen3:8b", Some("reasoning"))] {
        let frames = vec![
            chunk(
                Some("c-8"),
                json!({"reasoning_content": "THINKING-BEFORE-CALL"}),
                None,
            ),
            chunk(
                None,
                call_fragment(
                    Some(0),
                    Some("call_r"),
                    Some("shell"),
                    json!("{\"command\":[\"echo\",\"R\"]}"),
                ),
                Some("tool_calls"),
            ),
            "[DONE]".to_string(),
        ];
        let mock = MockModelServer::start(Script::new([
            Turn::raw(frames),
            Turn::new([assistant_message("all done")]),
        ]))
        .await?;
        let home = tempfile::tempdir()?;
        let ws = tempfile::tempdir()?;
        let mut config = vec![
            ("model_providers.mock.wire_api", toml::Value::from("chat")),
            ("features.unified_exec", toml::Value::from(false)),
        ];
        if let Some(field) = field {
            config.push(("model_providers.mock.chat_reasoning_field", field.into()));
        }
        write_config(home.path(), &mock.uri(), config)?;
        let out = keel_exec(home.path(), ws.path(), &["-m", model, "go"], None).await?;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let requests = mock.requests();
        let messages = requests[1].input();
        let call = messages
            .iter()
            .find(|m| m.get("tool_calls").is_some())
            .cloned()
            .unwrap_or_default();
        let field = field.unwrap_or("reasoning_content");
        assert_eq!(call[field], "THINKING-BEFORE-CALL", "{model}: {call}");
    }
    Ok(())
}
