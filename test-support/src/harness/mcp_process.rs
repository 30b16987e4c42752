//! [`McpProcess`]: a [`JsonLinesProcess`] that speaks MCP, with the handshake and common calls
//! as one-liners. Generic over the server binary, so it can drive Keel or a reference server.

use std::ops::{Deref, DerefMut};

use serde_json::{Value, json};

use crate::error::Result;
use crate::harness::builder::ProcessBuilder;
use crate::harness::process::JsonLinesProcess;

/// The MCP revision the harness offers.
pub const MCP_PROTOCOL_VERSION: &str = "2025-06-18";

/// A running MCP server over stdio. Derefs to [`JsonLinesProcess`] for raw reads and writes.
#[derive(Debug)]
pub struct McpProcess {
    process: JsonLinesProcess,
}

impl McpProcess {
    /// Spawns the server configured by `builder` (with `"jsonrpc": "2.0"` on every message).
    pub fn spawn(builder: ProcessBuilder) -> Result<Self> {
        Ok(Self {
            process: builder.spawn()?,
        })
    }

    /// `initialize` declaring the `elicitation` capability, then `notifications/initialized`;
    /// returns the `initialize` result.
    pub async fn initialize(&mut self) -> Result<Value> {
        self.initialize_with_capabilities(json!({"elicitation": {}}))
            .await
    }

    /// The handshake with the given client capabilities.
    pub async fn initialize_with_capabilities(&mut self, capabilities: Value) -> Result<Value> {
        let result = self
            .process
            .request(
                "initialize",
                json!({
                    "protocolVersion": MCP_PROTOCOL_VERSION,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "keel-test", "version": "0"},
                }),
            )
            .await?;
        self.process
            .send_notification("notifications/initialized", json!({}))
            .await?;
        Ok(result)
    }

    /// `tools/list`'s result.
    pub async fn list_tools(&mut self) -> Result<Value> {
        self.process.request("tools/list", json!({})).await
    }

    /// Sends `tools/call` and returns the request id; read the result with
    /// [`JsonLinesProcess::read_result`].
    pub async fn send_tool_call(&mut self, name: &str, arguments: Value) -> Result<i64> {
        self.process
            .send_request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// Calls a tool and waits for its result.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value> {
        let id = self.send_tool_call(name, arguments).await?;
        self.process.read_result(id).await
    }

    /// Sends `notifications/cancelled` for request `id`.
    pub async fn cancel(&mut self, id: i64) -> Result<()> {
        self.process
            .send_notification(
                "notifications/cancelled",
                json!({"requestId": id, "reason": "test"}),
            )
            .await
    }

    /// Reads until a `codex/event` whose `msg.type` is `event_type`; returns its params.
    pub async fn read_codex_event(&mut self, event_type: &str) -> Result<Value> {
        let mut message = self
            .process
            .read_until(&format!("codex/event of type {event_type:?}"), |message| {
                message.get("method").and_then(Value::as_str) == Some("codex/event")
                    && message.get("id").is_none()
                    && message["params"]["msg"]["type"].as_str() == Some(event_type)
            })
            .await?;
        Ok(message
            .get_mut("params")
            .map(Value::take)
            .unwrap_or_default())
    }

    /// Reads until an `elicitation/create` request; returns the whole request.
    pub async fn read_elicitation(&mut self) -> Result<Value> {
        self.process
            .read_until("an elicitation/create request", |message| {
                message.get("id").is_some()
                    && message.get("method").and_then(Value::as_str) == Some("elicitation/create")
            })
            .await
    }
}

impl Deref for McpProcess {
    type Target = JsonLinesProcess;

    fn deref(&self) -> &Self::Target {
        &self.process
    }
}

impl DerefMut for McpProcess {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.process
    }
}
