//! The configured MCP servers as a client reaches them outside any turn: their state (the
//! app-server's `mcpServerStatus/list`), one resource (`mcpServer/resource/read`) and a tool
//! call (`mcpServer/tool/call`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::registry::McpRegistry;
use crate::config::{McpServerConfig, McpServerTransport};

/// One configured server as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerState {
    /// The server's configured name.
    pub name: String,
    /// `false` for a server configured with `enabled = false` (never started).
    pub enabled: bool,
    /// Whether it is reached with a bearer token.
    pub bearer_token: bool,
    /// Whether an OAuth login is stored for it (`keel mcp login`).
    pub logged_in: bool,
    /// Whether it asked for OAuth and no login is stored.
    pub needs_login: bool,
    /// Its tools as it lists them (JSON `Tool` objects), or why it did not start.
    pub tools: Result<Vec<Value>, String>,
    /// Its resources (JSON `Resource` objects; empty when it offers none).
    pub resources: Vec<Value>,
    /// Its resource templates (JSON `ResourceTemplate` objects).
    pub resource_templates: Vec<Value>,
}

/// Starts (or joins the running start of) every enabled server and reports each.
pub(crate) async fn server_states(
    registry: &McpRegistry,
    servers: &BTreeMap<String, McpServerConfig>,
    http: &reqwest::Client,
) -> Vec<McpServerState> {
    let states = servers.iter().map(|(name, config)| async move {
        let bearer_token = matches!(
            &config.transport,
            McpServerTransport::StreamableHttp {
                bearer_token_env_var: Some(_),
                ..
            }
        );
        let logged_in = super::has_stored_login(name, config).await;
        let mut needs_login = false;
        let (tools, (resources, resource_templates)) = if config.enabled {
            let entry = registry.entry(name, config);
            match entry.connect(http).await {
                Ok(connection) => (
                    Ok(connection
                        .tools()
                        .iter()
                        .filter(|tool| config.offers_tool(&tool.name))
                        .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
                        .collect()),
                    connection.resources().await,
                ),
                Err(err) => {
                    needs_login = matches!(err, super::McpError::NeedsLogin { .. });
                    (Err(err.to_string()), Default::default())
                }
            }
        } else {
            (Ok(Vec::new()), Default::default())
        };
        McpServerState {
            name: name.clone(),
            enabled: config.enabled,
            bearer_token,
            logged_in,
            needs_login,
            tools,
            resources,
            resource_templates,
        }
    });
    futures::future::join_all(states).await
}

/// The enabled server `name` of `servers`, started (or joined) through the shared registry;
/// an unknown or disabled name is an error naming the configured ones.
fn server_entry(
    registry: &McpRegistry,
    servers: &BTreeMap<String, McpServerConfig>,
    name: &str,
) -> Result<std::sync::Arc<super::registry::ServerEntry>, String> {
    let config = servers
        .get(name)
        .filter(|config| config.enabled)
        .ok_or_else(|| {
            let known: Vec<&str> = servers
                .iter()
                .filter(|(_, config)| config.enabled)
                .map(|(name, _)| name.as_str())
                .collect();
            format!(
                "unknown MCP server `{name}`; configured: {}",
                known.join(", ")
            )
        })?;
    Ok(registry.entry(name, config))
}

/// Reads resource `uri` of server `name` (starting it if it is not running): the server's
/// result as JSON (`{"contents": [...]}`), or why it could not be read.
pub(crate) async fn read_resource(
    registry: &McpRegistry,
    servers: &BTreeMap<String, McpServerConfig>,
    http: &reqwest::Client,
    name: &str,
    uri: &str,
) -> Result<Value, String> {
    let entry = server_entry(registry, servers, name)?;
    match entry.connect(http).await {
        Ok(connection) => connection.read_resource(uri).await,
        Err(err) => Err(format!("MCP server `{name}` is not running: {err}")),
    }
}

/// Calls `tool` of server `name` for a client (starting the server if it is not running),
/// bounded by its `tool_timeout_sec`; what the server asks meanwhile is declined. The
/// server's result as JSON (`{"content": [...], "isError"?, "structuredContent"?}`), or why
/// the call failed.
pub(crate) async fn call_tool(
    registry: &McpRegistry,
    servers: &BTreeMap<String, McpServerConfig>,
    http: &reqwest::Client,
    name: &str,
    tool: &str,
    arguments: Option<Value>,
) -> Result<Value, String> {
    let arguments = match arguments {
        None | Some(Value::Null) => None,
        Some(Value::Object(object)) => Some(object),
        Some(other) => return Err(format!("`arguments` must be an object, not {other}")),
    };
    let entry = server_entry(registry, servers, name)?;
    let connection = entry
        .connect(http)
        .await
        .as_ref()
        .map_err(|err| format!("MCP server `{name}` is not running: {err}"))?;
    if !connection.tools().iter().any(|known| known.name == tool) {
        return Err(format!("MCP server `{name}` has no tool `{tool}`"));
    }
    let never = tokio_util::sync::CancellationToken::new();
    let result = connection
        .call_tool(tool, arguments, &never, drop)
        .await
        .map_err(|err| err.to_string())?;
    serde_json::to_value(result).map_err(|err| err.to_string())
}
