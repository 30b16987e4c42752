//! `keel mcp-server` as a client of external MCP servers: its sessions call their tools and
//! forward the calls to its own client as `codex/event` notifications.

use keel_test_support::{
    McpProcess, MockModelServer, ProcessBuilder, Script, Turn, assistant_message, function_call,
    write_config,
};
use serde_json::json;

use super::stdio_server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(keel_mcp_everything),
    ignore = "needs KEEL_MCP_EVERYTHING: the reference MCP server from npm (.ci/run installs it)"
)]
async fn mcp_tool_calls_are_forwarded_as_codex_events() -> anyhow::Result<()> {
    let marker = format!("keel-mcp-frontend-{}", std::process::id());
    let mock = MockModelServer::start(Script::new([
        Turn::new([function_call(
            "m1",
            "mcp__everything__echo",
            json!({"message": "via keel mcp-server"}).to_string(),
        )]),
        Turn::new([assistant_message("echoed")]),
    ]))
    .await?;
    let home = tempfile::tempdir()?;
    let ws = tempfile::tempdir()?;
    write_config(
        home.path(),
        &mock.uri(),
        stdio_server("everything", &marker)?,
    )?;
    let mut mcp = McpProcess::spawn(
        ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("mcp-server")
            .home_path(home.path())
            .home_var("KEEL_HOME")
            .cwd(ws.path())
            .env_remove("RUST_LOG"),
    )?;
    mcp.initialize().await?;
    let id = mcp
        .send_tool_call("codex", json!({"prompt": "echo it", "cwd": ws.path()}))
        .await?;
    let begin = mcp.read_codex_event("mcp_tool_call_begin").await?;
    assert_eq!(begin["msg"]["invocation"]["server"], "everything");
    assert_eq!(begin["msg"]["invocation"]["tool"], "echo");
    let end = mcp.read_codex_event("mcp_tool_call_end").await?;
    assert_eq!(end["msg"]["call_id"], "m1");
    assert!(
        end["msg"]["result"]["Ok"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Echo: via keel mcp-server"))
    );
    let result = mcp.read_result(id).await?;
    assert_eq!(result["structuredContent"]["content"], "echoed");
    Ok(())
}
