//! The model client: one streaming request to an OpenAI-compatible provider, over the
//! Responses API or the Chat Completions API, mapped to one stream of [`ResponseEvent`]s.
//!
//! Retries are the caller's: a failed request or a broken stream comes back as a
//! [`CoreError`] whose [`CoreError::is_retryable`] says whether to try again, so the turn loop
//! can tell the user about each retry.

mod chat_api;
mod prompt;
mod response_event;
mod responses_api;
mod sse;

use std::time::Duration;

use futures::StreamExt;
use keel_protocol::ReasoningEffort;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use prompt::Prompt;
pub use response_event::ResponseEvent;

use crate::config::WireApi;
use crate::error::{CoreError, Result};

/// Everything needed to talk to one provider, resolved from configuration.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// Full request URL (base URL + `/responses` or `/chat/completions` + query).
    pub url: String,
    /// Which wire API the provider speaks.
    pub wire_api: WireApi,
    /// Extra HTTP headers.
    pub headers: Vec<(String, String)>,
    /// The API key, or the error to report when the first request needs it.
    pub api_key: std::result::Result<Option<String>, String>,
    /// The model to sample.
    pub model: String,
    /// Reasoning effort, for models that reason.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// How long the stream may stay silent before it counts as broken.
    pub stream_idle_timeout: Duration,
}

/// A reusable client for one provider; cheap to clone.
#[derive(Debug, Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    settings: ClientSettings,
}

/// Events of one response as they stream. Dropping it stops the request.
pub struct ResponseStream {
    rx: mpsc::Receiver<Result<ResponseEvent>>,
    cancel: CancellationToken,
}

impl ResponseStream {
    /// The next event, or `None` when the stream is over. Cancel-safe.
    pub async fn next(&mut self) -> Option<Result<ResponseEvent>> {
        self.rx.recv().await
    }
}

impl Drop for ResponseStream {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl ModelClient {
    /// A client for the given provider settings.
    pub fn new(settings: ClientSettings) -> Self {
        Self {
            http: reqwest::Client::new(),
            settings,
        }
    }

    /// The same provider with another model or reasoning effort.
    pub fn with_model(&self, model: String, effort: Option<ReasoningEffort>) -> Self {
        let mut settings = self.settings.clone();
        settings.model = model;
        settings.reasoning_effort = effort;
        Self {
            http: self.http.clone(),
            settings,
        }
    }

    /// The settings this client was built from.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// Sends one streaming request. Errors before the first byte (connection, HTTP status,
    /// missing key) are returned here; errors mid-stream arrive on the stream.
    pub async fn stream(&self, prompt: &Prompt) -> Result<ResponseStream> {
        let api_key = self
            .settings
            .api_key
            .clone()
            .map_err(CoreError::MissingApiKey)?;
        let body = match self.settings.wire_api {
            WireApi::Responses => responses_api::request_body(&self.settings, prompt),
            WireApi::Chat => chat_api::request_body(&self.settings, prompt),
        };
        let mut request = self
            .http
            .post(&self.settings.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(&body);
        if let Some(key) = api_key {
            request = request.bearer_auth(key);
        }
        for (name, value) in &self.settings.headers {
            request = request.header(name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|source| CoreError::connect(&self.settings.url, &source))?;
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

        // Capacity 64: the turn loop drains events as fast as it forwards them; when its own
        // consumer is slow, this fills and the reader stops pulling from the socket.
        let (tx, rx) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        let frames = sse::frames(response.bytes_stream(), self.settings.stream_idle_timeout);
        let wire_api = self.settings.wire_api;
        let token = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = pump(wire_api, frames, tx) => {}
            }
        });
        Ok(ResponseStream { rx, cancel })
    }
}

/// Maps SSE frames to response events until the response completes or fails.
async fn pump(
    wire_api: WireApi,
    frames: impl futures::Stream<Item = Result<sse::Frame>> + Send,
    tx: mpsc::Sender<Result<ResponseEvent>>,
) {
    let mut frames = std::pin::pin!(frames);
    let mut chat = chat_api::ChatAccumulator::default();
    while let Some(frame) = frames.next().await {
        let outcome = frame.and_then(|frame| match wire_api {
            WireApi::Responses => responses_api::map_frame(&frame),
            WireApi::Chat => chat.map_frame(&frame),
        });
        match outcome {
            Ok(events) => {
                let mut completed = false;
                for event in events {
                    completed |= matches!(event, ResponseEvent::Completed { .. });
                    if tx.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
                if completed {
                    return;
                }
            }
            Err(err) => {
                if tx.send(Err(err)).await.is_err() {
                    tracing::debug!("response consumer went away before an error was delivered");
                }
                return;
            }
        }
    }
    let err = CoreError::Stream("stream closed before response.completed".to_string());
    if tx.send(Err(err)).await.is_err() {
        tracing::debug!("response consumer went away before the stream ended");
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
