//! `keel mcp-server` is wired to keel-mcp-server (whose own tests cover the protocol).

use keel_test_support::{McpProcess, ProcessBuilder};
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_mcp_server_answers_the_handshake_and_lists_the_tools() -> anyhow::Result<()> {
    let mut mcp = McpProcess::spawn(
        ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("mcp-server")
            .home_var("KEEL_HOME"),
    )?;
    let init = mcp.initialize().await?;
    assert_eq!(init["serverInfo"]["name"], json!("keel-mcp-server"));
    let tools = mcp.list_tools().await?;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, vec!["codex", "codex-reply"]);
    mcp.close_stdin();
    assert!(mcp.wait().await?.success());
    Ok(())
}
