//! The `codex` and `codex-reply` tools end to end.

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_a_command_and_codex_reply_continues() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call(
            "c1",
            [
                "bash",
                "-lc",
                "echo hello-from-shell > out.txt; cat out.txt",
            ],
        )]),
        Turn::new([assistant_message("All done: wrote out.txt")]),
        Turn::new([assistant_message("Second answer")]),
    ]);
    let mut server = TestServer::initialized(script, &[]).await?;
    let id = server
        .mcp
        .send_tool_call("codex", json!({"prompt": "do it", "cwd": server.ws_arg()}))
        .await?;

    // The first event is session_configured with an empty id, then the turn's events carry
    // the tool call's id; every event names the request and thread in `_meta`.
    let first = server.mcp.read_notification("codex/event").await?;
    let params = &first["params"];
    assert_eq!(params["msg"]["type"], json!("session_configured"));
    assert_eq!(params["id"], json!(""));
    assert_eq!(params["_meta"]["requestId"], json!(id));
    let thread_id = params["_meta"]["threadId"].clone();
    assert_eq!(params["msg"]["session_id"], thread_id);

    let end = server.mcp.read_codex_event("exec_command_end").await?;
    assert_eq!(end["msg"]["stdout"], json!("hello-from-shell\n"));
    assert_eq!(end["id"], json!(id.to_string()));
    assert_eq!(
        end["_meta"],
        json!({"requestId": id, "threadId": thread_id})
    );
    server.mcp.read_codex_event("task_complete").await?;

    let result = server.mcp.read_result(id).await?;
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": "All done: wrote out.txt"}],
            "structuredContent": {"threadId": thread_id, "content": "All done: wrote out.txt"},
        })
    );
    assert_eq!(
        std::fs::read_to_string(server.ws().join("out.txt"))?,
        "hello-from-shell\n"
    );

    // codex-reply continues the same thread; the deprecated conversationId works too.
    let reply = server
        .mcp
        .call_tool(
            "codex-reply",
            json!({"conversationId": thread_id, "prompt": "and then?"}),
        )
        .await?;
    assert_eq!(
        reply["structuredContent"]["content"],
        json!("Second answer")
    );
    assert_eq!(reply["structuredContent"]["threadId"], thread_id);
    let requests = server.mock.requests();
    assert_eq!(requests.len(), 3);
    let last_input = serde_json::to_string(requests[2].input())?;
    assert!(
        last_input.contains("hello-from-shell") && last_input.contains("and then?"),
        "{last_input}"
    );
    server.mock.verify()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reply_with_a_bad_thread_id_is_an_error_result() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(Script::new([]), &[]).await?;
    let malformed = server
        .mcp
        .call_tool(
            "codex-reply",
            json!({"threadId": "not-a-uuid", "prompt": "hi"}),
        )
        .await?;
    assert!(is_error(&malformed), "{malformed}");
    assert!(
        result_text(&malformed).contains("not-a-uuid"),
        "{malformed}"
    );

    let unknown_id = "0199a213-81c0-7800-8aa1-bbab2a035a53";
    let unknown = server
        .mcp
        .call_tool(
            "codex-reply",
            json!({"threadId": unknown_id, "prompt": "hi"}),
        )
        .await?;
    assert!(is_error(&unknown), "{unknown}");
    assert!(result_text(&unknown).contains(unknown_id), "{unknown}");

    let missing = server
        .mcp
        .call_tool("codex-reply", json!({"prompt": "hi"}))
        .await?;
    assert!(is_error(&missing), "{missing}");
    assert_eq!(server.mock.requests().len(), 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_is_an_error_result_naming_the_problem() -> anyhow::Result<()> {
    // An empty script: the mock answers HTTP 500 `script_exhausted`.
    let mut server = TestServer::initialized(Script::new([]), &[]).await?;
    let result = server
        .mcp
        .call_tool("codex", json!({"prompt": "hi", "cwd": server.ws_arg()}))
        .await?;
    assert!(is_error(&result), "{result}");
    assert!(
        result["structuredContent"]["threadId"].is_string(),
        "{result}"
    );
    assert_ne!(result_text(&result), "");
    let bad_config = server
        .mcp
        .call_tool(
            "codex",
            json!({"prompt": "hi", "config": {"model_reasoning_effort": Value::Null}}),
        )
        .await?;
    assert!(is_error(&bad_config), "{bad_config}");
    Ok(())
}
