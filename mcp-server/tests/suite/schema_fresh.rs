//! `docs/schema/mcp-server/` holds the JSON Schema of every MCP message keel-mcp-server answers
//! and sends (rmcp's types for the specification's messages, Keel's for the Codex
//! extensions); this test fails when it is stale. Regenerate with
//! `KEEL_REGENERATE_SCHEMA=1 cargo test -p keel-mcp-server schema_fresh`.

use keel_mcp_server::methods::{
    McpClientNotification, McpClientRequest, McpServerNotification, McpServerRequest,
};
use schemars::JsonSchema;

fn render<T: JsonSchema>() -> anyhow::Result<String> {
    let schema = schemars::schema_for!(T);
    Ok(serde_json::to_string_pretty(&schema)? + "\n")
}

#[test]
fn mcp_message_schemas_are_fresh() -> anyhow::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema/mcp-server");
    let files = [
        ("McpClientRequest.json", render::<McpClientRequest>()?),
        (
            "McpClientNotification.json",
            render::<McpClientNotification>()?,
        ),
        ("McpServerRequest.json", render::<McpServerRequest>()?),
        (
            "McpServerNotification.json",
            render::<McpServerNotification>()?,
        ),
    ];
    let regenerate = std::env::var_os("KEEL_REGENERATE_SCHEMA").is_some();
    if regenerate {
        std::fs::create_dir_all(&dir)?;
    }
    for (name, expected) in files {
        let path = dir.join(name);
        if regenerate {
            std::fs::write(&path, &expected)?;
            continue;
        }
        let found = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            found == expected,
            "docs/schema/mcp-server/{name} is stale or missing; regenerate with \
             `KEEL_REGENERATE_SCHEMA=1 cargo test -p keel-mcp-server schema_fresh`"
        );
    }
    Ok(())
}
