//! `notifications/cancelled` interrupts a running call.

use std::time::{Duration, Instant};

use keel_test_support::{Script, Turn, assistant_message, shell_call};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_interrupts_a_long_command_within_a_second() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "sleep 30"])]),
        Turn::new([assistant_message("never reached")]),
    ]);
    let mut server = TestServer::initialized(script, &[]).await?;
    let id = server
        .mcp
        .send_tool_call("codex", json!({"prompt": "sleep", "cwd": server.ws_arg()}))
        .await?;
    server.mcp.read_codex_event("exec_command_begin").await?;
    let cancelled_at = Instant::now();
    server.mcp.cancel(id).await?;
    let result = server.mcp.read_result(id).await?;
    let elapsed = cancelled_at.elapsed();
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    assert!(is_error(&result), "{result}");
    assert!(result_text(&result).contains("interrupted"), "{result}");
    assert_eq!(server.mock.requests().len(), 1);

    // The server is still usable.
    assert_eq!(server.mcp.request("ping", json!({})).await?, json!({}));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_sent_with_the_call_still_stops_it() -> anyhow::Result<()> {
    let script = Script::new([
        Turn::new([shell_call("c1", ["bash", "-lc", "sleep 30"])]),
        Turn::new([assistant_message("never reached")]),
    ]);
    let mut server = TestServer::initialized(script, &[]).await?;
    // Sent back to back, the cancellation usually reaches the server while the call is still
    // starting its session; it must not be lost, or the call would run `sleep 30`.
    let sent_at = Instant::now();
    let id = server
        .mcp
        .send_tool_call("codex", json!({"prompt": "sleep", "cwd": server.ws_arg()}))
        .await?;
    server.mcp.cancel(id).await?;
    let result = server.mcp.read_result(id).await?;
    let elapsed = sent_at.elapsed();
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    assert!(is_error(&result), "{result}");
    assert!(result_text(&result).contains("interrupted"), "{result}");
    assert!(
        result["structuredContent"]["threadId"].is_string(),
        "{result}"
    );
    assert_eq!(server.mcp.request("ping", json!({})).await?, json!({}));
    Ok(())
}
