//! A Streamable HTTP MCP client for the tests: `keel-mcp-server --listen` started against the
//! mock, requests POSTed with the headers a real client sends, SSE answers read event by event.

use std::time::Duration;

use eventsource_stream::{Event, Eventsource};
use futures::{Stream, StreamExt};
use keel_test_support::{JsonLinesProcess, MockModelServer, ProcessBuilder, Script, write_config};
use serde_json::{Value, json};

use super::common::SERVER_BIN;

/// How long any single wait may take on busy cores.
pub const WAIT: Duration = Duration::from_secs(60);

/// A server listening on HTTP, the mock behind it, and its workspace.
pub struct HttpServer {
    /// Held so the server lives as long as the test.
    pub _process: JsonLinesProcess,
    pub _mock: MockModelServer,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub ws: std::path::PathBuf,
}

impl HttpServer {
    /// Starts the mock with `script` and the server with `args` after `--listen`'s.
    pub async fn start(script: Script, args: &[&str]) -> anyhow::Result<Self> {
        let mock = MockModelServer::start(script).await?;
        let home = tempfile::Builder::new()
            .prefix("keel-mcp-http-")
            .tempdir()?;
        write_config(home.path(), &mock.uri(), std::iter::empty::<(&str, &str)>())?;
        let ws = home.path().join("ws");
        std::fs::create_dir_all(&ws)?;
        let mut process = ProcessBuilder::new(SERVER_BIN)
            .args(["--listen", "http://127.0.0.1:0"])
            .args(args.iter().copied())
            .home_var("KEEL_HOME")
            .env("RUST_LOG", "keel_mcp_server=debug,warn")
            .home(home)
            .spawn()?;
        let url = process.http_endpoint().await?;
        Ok(Self {
            _process: process,
            _mock: mock,
            url,
            ws,
        })
    }

    pub fn ws_arg(&self) -> Value {
        Value::String(self.ws.display().to_string())
    }

    /// A client of this server (no session yet).
    pub fn client(&self) -> HttpMcp {
        keel_core::install_tls_provider();
        HttpMcp {
            url: self.url.clone(),
            http: reqwest::Client::new(),
            session: None,
        }
    }
}

/// One client: its session id once `initialize` gave one.
pub struct HttpMcp {
    pub url: String,
    pub http: reqwest::Client,
    pub session: Option<String>,
}

/// An SSE answer read so far.
pub struct SseReader {
    events: std::pin::Pin<Box<dyn Stream<Item = anyhow::Result<Event>> + Send>>,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        let events = response
            .bytes_stream()
            .eventsource()
            .map(|event| event.map_err(|err| anyhow::anyhow!("bad SSE: {err}")));
        Self {
            events: Box::pin(events),
        }
    }

    /// The next event (`None` when the stream ended).
    pub async fn next(&mut self) -> anyhow::Result<Option<Event>> {
        tokio::time::timeout(WAIT, self.events.next())
            .await
            .map_err(|_| anyhow::anyhow!("no SSE event within {WAIT:?}"))?
            .transpose()
    }

    /// Reads messages until the response to `id`; returns everything read (as `(event id,
    /// message)`), the response last.
    pub async fn until_response(&mut self, id: &Value) -> anyhow::Result<Vec<(String, Value)>> {
        let mut seen = Vec::new();
        loop {
            let Some(event) = self.next().await? else {
                anyhow::bail!("the stream ended before the response to {id}: {seen:?}");
            };
            if event.data.trim().is_empty() {
                continue;
            }
            let message: Value = serde_json::from_str(&event.data)?;
            let done = &message["id"] == id && message.get("method").is_none();
            seen.push((event.id, message));
            if done {
                return Ok(seen);
            }
        }
    }
}

impl HttpMcp {
    /// A POST with the session headers and `extra`.
    pub async fn post(
        &self,
        body: &Value,
        extra: &[(&str, &str)],
    ) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        Ok(tokio::time::timeout(WAIT, request.send()).await??)
    }

    /// `initialize` (declaring elicitation) and `notifications/initialized`.
    pub async fn initialize(&mut self) -> anyhow::Result<Value> {
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "keel-http-test", "version": "1"},
                }}),
                &[],
            )
            .await?;
        anyhow::ensure!(
            response.status() == 200,
            "initialize: {}",
            response.status()
        );
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| anyhow::anyhow!("no Mcp-Session-Id on the initialize answer"))?
            .to_string();
        let result: Value = response.json().await?;
        self.session = Some(session);
        let initialized = self
            .post(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                &[],
            )
            .await?;
        anyhow::ensure!(
            initialized.status() == 202,
            "initialized: {}",
            initialized.status()
        );
        Ok(result)
    }

    /// A request answered with one JSON body: the whole JSON-RPC response.
    pub async fn call_json(&self, id: i64, method: &str, params: Value) -> anyhow::Result<Value> {
        let response = self
            .post(
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                &[],
            )
            .await?;
        anyhow::ensure!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                == Some("application/json"),
            "{method} was not answered with JSON: {:?}",
            response.headers()
        );
        Ok(response.json().await?)
    }
}
