//! The mock model server handle: start, script, inspect, stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::mock::capture::CapturedRequest;
use crate::mock::handler::handle;
use crate::mock::invariants::Violation;
use crate::mock::script::{Script, Turn};
use crate::mock::state::{ModelMetadata, Responder, Shared};

/// The model id served when the script names none.
pub const DEFAULT_MODEL: &str = "mock-model";

/// A running mock model server. Dropping it stops accepting connections.
pub struct MockModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

/// Configures a [`MockModelServer`] before it starts.
#[must_use]
pub struct MockModelBuilder {
    bind: String,
    model: Option<String>,
    turns: Vec<Turn>,
    responder: Option<Responder>,
    repeat: bool,
    api_key: Option<String>,
    metadata: ModelMetadata,
}

impl MockModelBuilder {
    /// Adds `fields` to the model's `GET /models` entry, as servers that say more than the id
    /// do (vLLM's `max_model_len`, OpenRouter's `context_length`, ...).
    pub fn model_list_fields(mut self, fields: serde_json::Value) -> Self {
        if let serde_json::Value::Object(fields) = fields {
            self.metadata.list_fields.extend(fields);
        }
        self
    }

    /// Answers Ollama's `POST /api/show` with `answer` (its `parameters`, `model_info`, ...).
    pub fn ollama_show(mut self, answer: serde_json::Value) -> Self {
        self.metadata.ollama_show = Some(answer);
        self
    }

    /// Answers Ollama's `GET /api/version` with `{"version": version}`.
    pub fn ollama_version(mut self, version: impl Into<String>) -> Self {
        self.metadata.ollama_version = Some(version.into());
        self
    }

    /// Listens on `addr` instead of `127.0.0.1:0`.
    pub fn bind(mut self, addr: impl Into<String>) -> Self {
        self.bind = addr.into();
        self
    }

    /// Advertises model id `model` (default `mock-model`).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Queues the turns (and model id, if any) of `script`.
    pub fn script(mut self, script: Script) -> Self {
        self.turns.extend(script.turns);
        if script.model.is_some() {
            self.model = script.model;
        }
        self
    }

    /// Queues one turn.
    pub fn turn(mut self, turn: Turn) -> Self {
        self.turns.push(turn);
        self
    }

    /// Answers every request that does not carry `Authorization: Bearer KEY` with HTTP 401
    /// `invalid_api_key`, as a provider does for a wrong key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Starts the script over once it is used up, instead of answering `script_exhausted`,
    /// so a script written for one run serves any number of runs.
    pub fn repeat(mut self, repeat: bool) -> Self {
        self.repeat = repeat;
        self
    }

    /// Lets `responder` choose the reply to each model request; when it returns `None` the
    /// next queued turn is served. It runs on the connection's task, so keep it quick.
    pub fn responder(
        mut self,
        responder: impl Fn(&CapturedRequest) -> Option<Turn> + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Arc::new(responder));
        self
    }

    /// Binds the socket and starts serving on the current tokio runtime.
    pub async fn start(self) -> Result<MockModelServer> {
        let bind_error = |source| Error::Bind {
            addr: self.bind.clone(),
            source,
        };
        let listener = tokio::net::TcpListener::bind(&self.bind)
            .await
            .map_err(bind_error)?;
        let addr = listener.local_addr().map_err(bind_error)?;
        let model = self.model.unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let shared = Arc::new(Shared::new(
            model,
            self.turns,
            self.responder,
            self.repeat,
            self.api_key,
            self.metadata,
        ));
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared))
            // Long conversations exceed axum's 2 MB default; the mock must take them all.
            .layer(DefaultBodyLimit::disable());
        let shutdown = CancellationToken::new();
        let signal = shutdown.clone().cancelled_owned();
        // Frames go out as they are written: without TCP_NODELAY a frame after a short pause
        // waits for the client's delayed acknowledgement (about 40 ms), skewing timings.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
            if let Err(err) = stream.set_nodelay(true) {
                tracing::debug!(%err, "cannot set TCP_NODELAY on a mock connection");
            }
        });
        let task = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, router)
                .with_graceful_shutdown(signal)
                .await
            {
                tracing::warn!(%err, "mock model server stopped with an error");
            }
        });
        tracing::debug!(%addr, "mock model server listening");
        Ok(MockModelServer {
            addr,
            shared,
            shutdown,
            task,
        })
    }
}

impl MockModelServer {
    /// A builder listening on `127.0.0.1:0` with an empty script.
    pub fn builder() -> MockModelBuilder {
        MockModelBuilder {
            bind: "127.0.0.1:0".to_owned(),
            model: None,
            turns: Vec::new(),
            responder: None,
            repeat: false,
            api_key: None,
            metadata: ModelMetadata::default(),
        }
    }

    /// Starts a server on `127.0.0.1:0` serving `script`.
    pub async fn start(script: Script) -> Result<Self> {
        Self::builder().script(script).start().await
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL clients use, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn uri(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The model id served.
    pub fn model(&self) -> &str {
        &self.shared.model
    }

    /// Appends a turn to the script.
    pub fn push_turn(&self, turn: Turn) {
        self.shared.push_turn(turn);
    }

    /// Turns not yet served.
    pub fn remaining_turns(&self) -> usize {
        self.shared.remaining_turns()
    }

    /// The model requests (Responses and Chat Completions) received so far, in order.
    pub fn requests(&self) -> Vec<CapturedRequest> {
        let mut requests = self.shared.requests();
        requests.retain(|request| request.endpoint.is_model_request());
        requests
    }

    /// Every request received so far, including `/models` and unknown paths, in order.
    pub fn all_requests(&self) -> Vec<CapturedRequest> {
        self.shared.requests()
    }

    /// Waits until at least `count` model requests have arrived, then returns them all.
    ///
    /// Cancel safe: dropping the future loses nothing.
    pub async fn wait_for_requests(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<CapturedRequest>> {
        let mut seen = self.shared.model_requests.subscribe();
        match tokio::time::timeout(timeout, seen.wait_for(|seen| *seen >= count)).await {
            // The sender lives in `shared`, which we hold, so `wait_for` cannot fail.
            Ok(_) => Ok(self.requests()),
            Err(_) => Err(Error::Timeout {
                what: format!("{count} model request(s)"),
                timeout,
                context: format!("; {} arrived", self.requests().len()),
            }),
        }
    }

    /// The invariant violations recorded so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.shared.violations()
    }

    /// Fails with every violation recorded so far, if any.
    pub fn verify(&self) -> Result<()> {
        let violations = self.violations();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(Error::Violations(violations))
        }
    }
}

impl Drop for MockModelServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.task.abort();
    }
}

impl std::fmt::Debug for MockModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockModelServer")
            .field("uri", &self.uri())
            .field("model", &self.shared.model)
            .finish_non_exhaustive()
    }
}
