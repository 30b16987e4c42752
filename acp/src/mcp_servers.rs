//! The editor's MCP servers (`session/new`'s `mcpServers`) as the thread's `mcp_servers`
//! configuration: stdio and streamable HTTP servers are used as if configured by hand; an
//! `sse` server (Keel has no legacy SSE client) is left out, with a notice for the editor.

use serde_json::{Map, Value, json};

/// The configuration overrides for the servers, and a notice for each left out.
pub(crate) fn config_of(servers: &[Value]) -> (Map<String, Value>, Vec<String>) {
    let mut config = Map::new();
    let mut notices = Vec::new();
    for server in servers {
        let Some(name) = server["name"].as_str().filter(|name| !name.is_empty()) else {
            notices.push("an MCP server without a name was left out".to_string());
            continue;
        };
        let pairs = |key: &str| -> Map<String, Value> {
            server[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|pair| {
                    Some((pair["name"].as_str()?.to_string(), pair["value"].clone()))
                })
                .collect()
        };
        let mut entry = match server["type"].as_str() {
            Some("http") => json!({"url": server["url"], "http_headers": pairs("headers")}),
            Some("sse") => {
                notices.push(format!(
                    "MCP server `{name}` uses the legacy SSE transport, which Keel does not speak; \
                     it was left out"
                ));
                continue;
            }
            _ => json!({"command": server["command"], "args": server["args"], "env": pairs("env")}),
        };
        // Members the editor left out (or empty) are not configured at all.
        if let Some(entry) = entry.as_object_mut() {
            entry.retain(|_, value| match value {
                Value::Null => false,
                Value::Object(map) => !map.is_empty(),
                _ => true,
            });
        }
        config.insert(format!("mcp_servers.{name}"), entry);
    }
    (config, notices)
}
