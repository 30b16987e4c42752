//! Keel's own model backends: an OpenAI-compatible server over HTTP, speaking one of the wire
//! APIs in `wire/` (the format builds the request and reads the answer), streamed as
//! server-sent events.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::response_stream::{ResponseStream, Source};
use super::settings::{ClientSettings, ORIGINATOR};
use super::wire::WireApi;
use super::wire_format::WireFormat;
use super::{ModelProvider, Prompt, ProviderCapabilities, rate_limits, sse};
use crate::error::{CoreError, Result};

/// Supplies the API key for each request (a key that rotates, or one kept in a secret
/// store); `None` falls back to the key the configuration resolved.
pub type ApiKeyFn = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The Responses API (`POST {base_url}/responses`), as OpenAI serves it.
#[derive(Clone)]
pub struct ResponsesApiProvider {
    http: HttpSender,
}

/// The Chat Completions API (`POST {base_url}/chat/completions`), as local and self-hosted
/// servers (Ollama, vLLM, llama.cpp, LM Studio) and most gateways serve it.
#[derive(Clone)]
pub struct ChatApiProvider {
    http: HttpSender,
}

impl ResponsesApiProvider {
    /// A backend sending requests on `http` (share one client, and so one connection pool).
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http: HttpSender { http, key: None },
        }
    }

    /// The same backend, taking the API key from `key` on every request.
    pub fn with_api_key(mut self, key: ApiKeyFn) -> Self {
        self.http.key = Some(key);
        self
    }
}

impl ChatApiProvider {
    /// A backend sending requests on `http` (share one client, and so one connection pool).
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http: HttpSender { http, key: None },
        }
    }

    /// The same backend, taking the API key from `key` on every request.
    pub fn with_api_key(mut self, key: ApiKeyFn) -> Self {
        self.http.key = Some(key);
        self
    }
}

impl ModelProvider for ResponsesApiProvider {
    fn stream<'a>(
        &'a self,
        settings: &'a ClientSettings,
        prompt: &'a Prompt,
    ) -> BoxFuture<'a, Result<ResponseStream>> {
        Box::pin(
            self.http
                .send(WireApi::Responses.format(), settings, prompt),
        )
    }

    fn capabilities(&self, _settings: &ClientSettings) -> ProviderCapabilities {
        WireApi::Responses.capabilities()
    }
}

impl ModelProvider for ChatApiProvider {
    fn stream<'a>(
        &'a self,
        settings: &'a ClientSettings,
        prompt: &'a Prompt,
    ) -> BoxFuture<'a, Result<ResponseStream>> {
        Box::pin(self.http.send(WireApi::Chat.format(), settings, prompt))
    }

    fn capabilities(&self, _settings: &ClientSettings) -> ProviderCapabilities {
        WireApi::Chat.capabilities()
    }
}

/// The provider the configuration names: Keel's HTTP client speaking the provider's
/// `wire_api`, whichever it is.
#[derive(Clone)]
pub(crate) struct ConfiguredHttpProvider {
    http: HttpSender,
}

impl ConfiguredHttpProvider {
    /// A provider sending on `http`, taking the API key from `key` when given.
    pub(crate) fn new(http: reqwest::Client, key: Option<ApiKeyFn>) -> Self {
        Self {
            http: HttpSender { http, key },
        }
    }
}

impl ModelProvider for ConfiguredHttpProvider {
    fn stream<'a>(
        &'a self,
        settings: &'a ClientSettings,
        prompt: &'a Prompt,
    ) -> BoxFuture<'a, Result<ResponseStream>> {
        Box::pin(self.http.send(settings.wire_api.format(), settings, prompt))
    }
}

/// What both HTTP backends share: the connection pool and where the key comes from.
#[derive(Clone)]
struct HttpSender {
    http: reqwest::Client,
    key: Option<ApiKeyFn>,
}

impl HttpSender {
    /// Sends one streaming request. Errors before the first byte (connection, HTTP status,
    /// missing key) are returned here; errors mid-stream arrive on the stream.
    async fn send(
        &self,
        format: &'static dyn WireFormat,
        settings: &ClientSettings,
        prompt: &Prompt,
    ) -> Result<ResponseStream> {
        let options = settings.request_options();
        let body = format.request_bytes(&options, prompt)?;
        let decoder = format.decoder(prompt);
        let api_key = match self.key.as_ref().and_then(|key| key()) {
            Some(key) => Some(key),
            None => settings.api_key.clone().map_err(CoreError::MissingApiKey)?,
        };
        let mut request = self
            .http
            .post(&settings.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = api_key {
            request = request.bearer_auth(key);
        }
        request = request
            .header("originator", ORIGINATOR)
            .header("x-client-request-id", uuid::Uuid::now_v7().to_string());
        if let Some(id) = &prompt.conversation_id {
            request = request.header("session_id", id);
        }
        for (name, value) in format.headers(&options, prompt) {
            request = request.header(name, value);
        }
        for (name, value) in &settings.headers {
            request = request.header(name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|source| CoreError::connect(&settings.url, &source))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<f64>().ok())
                // `try_from` rather than `from_secs_f64`: a value too large for a `Duration`
                // must fall back to our backoff, not panic the turn.
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok());
            let mut body = response.text().await.unwrap_or_default();
            truncate_in_place(&mut body, 2048);
            return Err(CoreError::HttpStatus {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }
        let rate_limits =
            rate_limits::from_headers(response.headers(), chrono::Utc::now().timestamp());
        Ok(ResponseStream {
            source: Source::Sse {
                frames: Box::pin(sse::frames(
                    response.bytes_stream(),
                    settings.stream_idle_timeout,
                )),
                decoder,
            },
            ready: VecDeque::new(),
            finished: false,
            rate_limits,
            idle_timeout: None,
        })
    }
}

/// Cuts a string to at most `max` bytes on a character boundary.
pub(crate) fn truncate_in_place(text: &mut String, max: usize) {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
}
