//! The MCP session itself: handshake, listing, housekeeping requests and error handling.

use keel_protocol::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use keel_test_support::{Script, Turn, assistant_message};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

/// Structural facts of the reference server's `tools/list` (names, argument names, required
/// lists, output members), vendored without descriptions.
const REFERENCE_TOOLS: &str = include_str!("../fixtures/reference-tools-structure.json");

fn structure(tools: &Value) -> Value {
    let tools = tools["tools"].as_array().cloned().unwrap_or_default();
    Value::Array(
        tools
            .iter()
            .map(|tool| {
                let mut properties: Vec<String> = tool["inputSchema"]["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                properties.sort();
                let mut output: Vec<String> = tool["outputSchema"]["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                output.sort();
                json!({
                    "name": tool["name"],
                    "inputProperties": properties,
                    "inputRequired": tool["inputSchema"]["required"],
                    "outputProperties": output,
                    "outputRequired": tool["outputSchema"]["required"],
                })
            })
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_lists_tools_matching_the_reference_structure() -> anyhow::Result<()> {
    let mut server = TestServer::start(Script::new([]), &[]).await?;
    let init = server.mcp.initialize().await?;
    assert_eq!(init["protocolVersion"], json!("2025-06-18"));
    assert_eq!(init["capabilities"]["tools"], json!({"listChanged": false}));
    assert_eq!(init["serverInfo"]["name"], json!("keel-mcp-server"));

    let tools = server.mcp.list_tools().await?;
    let reference: Value = serde_json::from_str(REFERENCE_TOOLS)?;
    assert_eq!(structure(&tools), reference);
    let codex = &tools["tools"][0];
    assert_eq!(
        codex["inputSchema"]["properties"]["approval-policy"]["enum"],
        json!(["untrusted", "on-failure", "on-request", "never"])
    );
    assert_eq!(
        codex["inputSchema"]["properties"]["config"]["type"],
        json!("object")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_protocol_version_gets_the_latest_supported() -> anyhow::Result<()> {
    let mut server = TestServer::start(Script::new([]), &[]).await?;
    let result = server
        .mcp
        .request(
            "initialize",
            json!({"protocolVersion": "2099-12-31", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    assert_eq!(result["protocolVersion"], json!("2025-11-25"));
    // A second initialize is refused.
    let id = server
        .mcp
        .send_request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await?;
    let response = server.mcp.read_response(id).await?;
    assert_eq!(response["error"]["code"], json!(INVALID_REQUEST));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_gets_an_answer() -> anyhow::Result<()> {
    let mut server = TestServer::start(Script::new([]), &[]).await?;

    // Before initialize: ping works, anything else is an error.
    assert_eq!(server.mcp.request("ping", json!({})).await?, json!({}));
    let early = server.mcp.send_request("tools/list", json!({})).await?;
    let early = server.mcp.read_response(early).await?;
    assert_eq!(early["error"]["code"], json!(INVALID_REQUEST), "{early}");
    assert_eq!(early["jsonrpc"], json!("2.0"));

    server.mcp.initialize().await?;
    assert_eq!(
        server.mcp.request("resources/list", json!({})).await?,
        json!({"resources": []})
    );
    assert_eq!(
        server
            .mcp
            .request("resources/templates/list", json!({}))
            .await?,
        json!({"resourceTemplates": []})
    );
    assert_eq!(
        server.mcp.request("prompts/list", json!({})).await?,
        json!({"prompts": []})
    );
    assert_eq!(
        server
            .mcp
            .request("logging/setLevel", json!({"level": "info"}))
            .await?,
        json!({})
    );

    let unknown = server
        .mcp
        .send_request("sampling/whatever", json!({}))
        .await?;
    let unknown = server.mcp.read_response(unknown).await?;
    assert_eq!(
        unknown["error"]["code"],
        json!(METHOD_NOT_FOUND),
        "{unknown}"
    );

    let bad = server
        .mcp
        .send_request("tools/call", json!({"arguments": {}}))
        .await?;
    let bad = server.mcp.read_response(bad).await?;
    assert_eq!(bad["error"]["code"], json!(INVALID_PARAMS), "{bad}");

    let bad_args = server
        .mcp
        .send_request(
            "tools/call",
            json!({"name": "codex", "arguments": {"prompt": 5}}),
        )
        .await?;
    let bad_args = server.mcp.read_response(bad_args).await?;
    assert_eq!(
        bad_args["error"]["code"],
        json!(INVALID_PARAMS),
        "{bad_args}"
    );

    let unknown_tool = server
        .mcp
        .send_request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await?;
    let unknown_tool = server.mcp.read_response(unknown_tool).await?;
    assert_eq!(
        unknown_tool["error"]["code"],
        json!(INVALID_PARAMS),
        "{unknown_tool}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_lines_get_errors_and_the_server_keeps_going() -> anyhow::Result<()> {
    let mut server = TestServer::initialized(Script::new([]), &[]).await?;
    server.mcp.send_raw_line("{this is not json").await?;
    let error = server
        .mcp
        .read_until("a parse error", |m| m.get("error").is_some())
        .await?;
    assert_eq!(error["error"]["code"], json!(PARSE_ERROR));
    assert_eq!(error["id"], Value::Null);

    server
        .mcp
        .send(&json!({"jsonrpc": "2.0", "id": 41, "params": {}}))
        .await?;
    let invalid = server.mcp.read_response(41).await?;
    assert_eq!(
        invalid["error"]["code"],
        json!(INVALID_REQUEST),
        "{invalid}"
    );

    for (line, code) in [
        (b"{\"id\": 1, \xff}".to_vec(), PARSE_ERROR),
        (b"[]".to_vec(), INVALID_REQUEST),
        (b"null".to_vec(), INVALID_REQUEST),
        (
            br#"{"jsonrpc": "2.0", "id": null, "method": "ping"}"#.to_vec(),
            INVALID_REQUEST,
        ),
    ] {
        server.mcp.send_raw_line(&line).await?;
        let error = server
            .mcp
            .read_until("an error answer", |m| m.get("error").is_some())
            .await?;
        assert_eq!(error["error"]["code"], json!(code), "{error}");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(
            !message.contains("enum") && !message.contains("struct"),
            "{message}"
        );
    }

    // Still serving.
    assert_eq!(server.mcp.request("ping", json!({})).await?, json!({}));
    Ok(())
}

/// A tool call read just before the client closed its input is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_read_before_end_of_input_is_answered() -> anyhow::Result<()> {
    for _ in 0..3 {
        let script = Script::new([Turn::new([assistant_message("answered after EOF")])]);
        let mut server = TestServer::initialized(script, &[]).await?;
        let id = server
            .mcp
            .send_tool_call("codex", json!({"prompt": "hi", "cwd": server.ws_arg()}))
            .await?;
        server.mcp.close_stdin();
        let response = server.mcp.read_response(id).await?;
        assert_eq!(result_text(&response["result"]), "answered after EOF");
        assert!(server.mcp.wait().await?.success());
    }
    Ok(())
}
