//! Spawning the server against the mock with a temporary home and workspace.

use std::path::{Path, PathBuf};

use keel_test_support::{McpProcess, MockModelServer, ProcessBuilder, Script, write_config};
use serde_json::Value;

/// The server binary of this crate.
pub const SERVER_BIN: &str = env!("CARGO_BIN_EXE_keel-mcp-server");

/// A running server, the mock it talks to, and the workspace sessions run in.
pub struct TestServer {
    pub mcp: McpProcess,
    pub mock: MockModelServer,
    ws: PathBuf,
}

impl TestServer {
    /// Starts the mock with `script` and the server with `config_overrides` in its
    /// `config.toml` (defaults: approval never, full access). Not initialized yet.
    pub async fn start(script: Script, config_overrides: &[(&str, &str)]) -> anyhow::Result<Self> {
        let mock = MockModelServer::start(script).await?;
        let home = tempfile::Builder::new().prefix("keel-mcp-").tempdir()?;
        write_config(
            home.path(),
            &mock.uri(),
            config_overrides.iter().map(|(k, v)| (*k, *v)),
        )?;
        let ws = home.path().join("ws");
        std::fs::create_dir_all(&ws)?;
        let mcp = McpProcess::spawn(
            ProcessBuilder::new(SERVER_BIN)
                .home_var("KEEL_HOME")
                .env("RUST_LOG", "keel_mcp_server=debug,warn")
                .home(home),
        )?;
        Ok(Self { mcp, mock, ws })
    }

    /// [`Self::start`] plus the handshake (declaring elicitation).
    pub async fn initialized(
        script: Script,
        config_overrides: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let mut server = Self::start(script, config_overrides).await?;
        server.mcp.initialize().await?;
        Ok(server)
    }

    /// The workspace directory.
    pub fn ws(&self) -> &Path {
        &self.ws
    }

    /// The workspace as a JSON string for tool arguments.
    pub fn ws_arg(&self) -> Value {
        Value::String(self.ws.display().to_string())
    }
}

/// The text of a tool result's first content block.
pub fn result_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Whether a tool result is an error result.
pub fn is_error(result: &Value) -> bool {
    result["isError"].as_bool().unwrap_or(false)
}
