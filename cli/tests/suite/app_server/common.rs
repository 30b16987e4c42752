use std::path::{Path, PathBuf};

use keel_test_support::{AppServerProcess, MockModelServer, ProcessBuilder, Script, write_config};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A mock model, a Keel home with a config pointing at it, a workspace, and a server.
pub struct World {
    pub mock: MockModelServer,
    pub home: TempDir,
    pub workspace: TempDir,
}

impl World {
    pub async fn new(script: Script, overrides: &[(&str, toml::Value)]) -> anyhow::Result<Self> {
        let mock = MockModelServer::start(script).await?;
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        write_config(home.path(), &mock.uri(), overrides.iter().cloned())?;
        Ok(Self {
            mock,
            home,
            workspace,
        })
    }

    /// A world around a mock that is already built (a responder, say).
    pub fn with_mock(
        mock: MockModelServer,
        overrides: &[(&str, toml::Value)],
    ) -> anyhow::Result<Self> {
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        write_config(home.path(), &mock.uri(), overrides.iter().cloned())?;
        Ok(Self {
            mock,
            home,
            workspace,
        })
    }

    pub fn builder(&self) -> ProcessBuilder {
        ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
            .arg("app-server")
            .home_path(self.home.path())
            .home_var("KEEL_HOME")
            .cwd(self.workspace.path())
            .env_remove("RUST_LOG")
    }

    /// A started, initialized server.
    pub async fn server(&self) -> anyhow::Result<AppServerProcess> {
        self.server_with(self.builder()).await
    }

    pub async fn server_with(&self, builder: ProcessBuilder) -> anyhow::Result<AppServerProcess> {
        let mut server = AppServerProcess::spawn(builder)?;
        server.initialize().await?;
        Ok(server)
    }

    pub fn ws(&self) -> &Path {
        self.workspace.path()
    }

    pub fn ws_file(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }

    pub fn thread_params(&self) -> Value {
        json!({"cwd": self.ws()})
    }
}

/// Method names of every message in `messages`, for readable assertions.
pub fn methods(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("<response>").to_string())
        .collect()
}

/// Reads messages until `turn/completed` for `turn_id`, returning all of them.
pub async fn until_turn_completed(
    server: &mut AppServerProcess,
    turn_id: &str,
) -> anyhow::Result<Vec<Value>> {
    let mut seen = Vec::new();
    loop {
        let message = server.read_message().await?;
        let done =
            message["method"] == "turn/completed" && message["params"]["turn"]["id"] == turn_id;
        seen.push(message);
        if done {
            return Ok(seen);
        }
    }
}

/// The properties and required fields of `ThreadItem` variant `tag` in Codex 0.115's
/// app-server schema (vendored: names only).
pub fn reference_item_fields(
    tag: &str,
) -> anyhow::Result<(
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../app-server/tests/fixtures/codex_0115_app_server_shapes.json"
    );
    let shapes: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let variant = &shapes["types"]["ThreadItem"]["variants"][tag];
    let names = |key: &str| {
        variant[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    Ok((names("properties"), names("required")))
}

/// The error object of a request that must fail.
pub async fn request_error(
    server: &mut keel_test_support::AppServerProcess,
    method: &str,
    params: Value,
) -> anyhow::Result<Value> {
    let id = server.send_request(method, params).await?;
    let response = server.read_response(id).await?;
    anyhow::ensure!(
        response.get("error").is_some(),
        "{method} succeeded: {response}"
    );
    Ok(response["error"].clone())
}
