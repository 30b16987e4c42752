//! The model client: one streaming request to an OpenAI-compatible provider, over the
//! Responses API or the Chat Completions API, mapped to one stream of [`ResponseEvent`]s.
//!
//! Retries are the caller's: a failed request or a broken stream comes back as a
//! [`CoreError`] whose [`CoreError::is_retryable`] says whether to try again, so the turn loop
//! can tell the user about each retry.

mod chat_api;
mod context_window;
mod http_provider;
mod prompt;
mod provider;
mod rate_limits;
mod response_event;
mod responses_api;
mod sse;
mod text_tool_calls;

use std::time::Duration;

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use keel_protocol::ReasoningEffort;

pub(crate) use context_window::discover_context_window;
pub use context_window::model_ids_match;
pub use http_provider::{ApiKeyFn, ChatApiProvider, ResponsesApiProvider};
pub use prompt::Prompt;
pub use provider::ModelProvider;
pub use response_event::ResponseEvent;

use crate::config::WireApi;
use crate::error::{CoreError, Result};

/// Names Keel to providers in the `originator` header.
const ORIGINATOR: &str = "keel";
/// `keel/<version> (<os>; <arch>)`, for providers' logs and support.
fn user_agent() -> String {
    format!(
        "keel/{} ({}; {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

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
    /// How much reasoning summary to ask for.
    pub reasoning_summary: crate::config::ReasoningSummaryMode,
    /// Answer length, for models that take it.
    pub verbosity: Option<crate::config::Verbosity>,
    /// The processing tier asked of the provider (`service_tier`).
    pub service_tier: Option<crate::config::ServiceTier>,
    /// Chat wire: the assistant-message field reasoning goes back in, if any.
    pub chat_reasoning_field: Option<String>,
    /// Whether the model reasons, whatever the family table says.
    pub reasoning_override: Option<bool>,
    /// How long the stream may stay silent before it counts as broken.
    pub stream_idle_timeout: Duration,
}

/// A reusable client for one provider; cheap to clone.
#[derive(Clone)]
pub struct ModelClient {
    provider: Arc<dyn ModelProvider>,
    settings: ClientSettings,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The HTTP client model requests are sent with, identifying Keel.
pub(crate) fn http_client() -> reqwest::Client {
    crate::tls::install_tls_provider();
    reqwest::Client::builder()
        .user_agent(user_agent())
        .build()
        .unwrap_or_else(|err| {
            tracing::warn!(%err, "default HTTP client settings used");
            reqwest::Client::new()
        })
}

/// Events of one response as they stream. Dropping it stops the request.
///
/// The caller's own polling reads the socket: no task or channel sits between them, so a
/// caller that stops asking stops the reading.
pub struct ResponseStream {
    source: Source,
    /// Events of the last frame not handed out yet.
    ready: VecDeque<ResponseEvent>,
    /// Set once the response completed or failed: nothing more is read.
    finished: bool,
    /// The rate limits the response's headers stated.
    rate_limits: Option<keel_protocol::RateLimitSnapshot>,
    /// How long an embedder's event stream may stay silent before it counts as broken (the
    /// HTTP streams keep their own watch on the socket).
    idle_timeout: Option<Duration>,
}

/// Where a response's events come from.
enum Source {
    /// Server-sent events of one of the HTTP wire APIs, mapped frame by frame.
    Sse {
        frames: Pin<Box<dyn Stream<Item = Result<sse::Frame>> + Send>>,
        wire_api: WireApi,
        chat: Box<chat_api::ChatAccumulator>,
    },
    /// Events a provider of the embedder's produces itself.
    Events(Pin<Box<dyn Stream<Item = Result<ResponseEvent>> + Send>>),
}

/// How long a Chat stream may stay open after its `finish_reason` before the answer is taken
/// as complete.
const CHAT_AFTER_FINISH_WAIT: Duration = Duration::from_secs(2);

impl ResponseStream {
    /// A response made of `events`, for a [`ModelProvider`] that produces events itself.
    /// It must end with [`ResponseEvent::Completed`]; a stream that ends before that counts as
    /// broken (and is retried).
    pub fn from_events(events: impl Stream<Item = Result<ResponseEvent>> + Send + 'static) -> Self {
        Self {
            source: Source::Events(Box::pin(events)),
            ready: VecDeque::new(),
            finished: false,
            rate_limits: None,
            idle_timeout: None,
        }
    }

    /// The same stream, reporting `limits` as the provider's rate limits.
    pub fn with_rate_limits(mut self, limits: keel_protocol::RateLimitSnapshot) -> Self {
        self.rate_limits = Some(limits);
        self
    }

    /// The provider's rate limits as the response's headers stated them, if they did.
    pub fn rate_limits(&self) -> Option<&keel_protocol::RateLimitSnapshot> {
        self.rate_limits.as_ref()
    }

    /// The next event, or `None` when the stream is over. Cancel-safe: state changes only
    /// once a frame has been read whole.
    pub async fn next(&mut self) -> Option<Result<ResponseEvent>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            let mapped = match &mut self.source {
                Source::Events(events) => match next_within(events, self.idle_timeout).await {
                    Err(idle) => {
                        self.finished = true;
                        return Some(Err(CoreError::StreamIdle(idle)));
                    }
                    Ok(Some(event)) => event.map(|event| vec![event]),
                    Ok(None) => {
                        self.finished = true;
                        return Some(Err(CoreError::Stream(
                            "stream closed before response.completed".to_string(),
                        )));
                    }
                },
                Source::Sse {
                    frames,
                    wire_api,
                    chat,
                } => {
                    // A Chat server that gave its `finish_reason` has finished its answer; some
                    // keep the stream open after it (no usage, no `[DONE]`): wait a moment for
                    // the usage chunk, then end the answer rather than wait for the idle timeout.
                    let next = if *wire_api == WireApi::Chat && chat.saw_finish_reason() {
                        match tokio::time::timeout(CHAT_AFTER_FINISH_WAIT, frames.next()).await {
                            Ok(next) => next,
                            Err(_) => {
                                self.finished = true;
                                self.ready.extend(chat.finish());
                                continue;
                            }
                        }
                    } else {
                        frames.next().await
                    };
                    let Some(frame) = next else {
                        self.finished = true;
                        // A Chat server that said why it stopped (`finish_reason`) and closed
                        // the stream without `[DONE]` has finished its answer; anything else
                        // is broken.
                        if *wire_api == WireApi::Chat && chat.saw_finish_reason() {
                            self.ready.extend(chat.finish());
                            continue;
                        }
                        return Some(Err(CoreError::Stream(
                            "stream closed before response.completed".to_string(),
                        )));
                    };
                    frame.and_then(|frame| match wire_api {
                        WireApi::Responses => responses_api::map_frame(&frame),
                        WireApi::Chat => chat.map_frame(&frame),
                    })
                }
            };
            match mapped {
                Ok(events) => {
                    self.finished = events
                        .iter()
                        .any(|event| matches!(event, ResponseEvent::Completed { .. }));
                    self.ready.extend(events);
                }
                Err(err) => {
                    self.finished = true;
                    return Some(Err(err));
                }
            }
        }
    }
}

impl ModelClient {
    /// A client for the given provider settings.
    pub fn new(settings: ClientSettings) -> Self {
        Self::with_http(http_client(), settings)
    }

    /// A client for `settings` on an existing connection pool (conversations of one
    /// process share one, so sub-agents reuse the parent's connections).
    pub fn with_http(http: reqwest::Client, settings: ClientSettings) -> Self {
        let provider: Arc<dyn ModelProvider> = match settings.wire_api {
            WireApi::Responses => Arc::new(ResponsesApiProvider::new(http)),
            WireApi::Chat => Arc::new(ChatApiProvider::new(http)),
        };
        Self::with_provider(provider, settings)
    }

    /// A client sampling through `provider` (the embedder's own backend) with `settings`'
    /// model and reasoning options.
    pub fn with_provider(provider: Arc<dyn ModelProvider>, settings: ClientSettings) -> Self {
        Self { provider, settings }
    }

    /// The same provider with another model or reasoning effort.
    pub fn with_model(&self, model: String, effort: Option<ReasoningEffort>) -> Self {
        let mut settings = self.settings.clone();
        settings.model = model;
        settings.reasoning_effort = effort;
        Self {
            provider: self.provider.clone(),
            settings,
        }
    }

    /// The settings this client was built from.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// The request body `prompt` becomes on this provider's wire API, as sent.
    pub fn request_bytes(&self, prompt: &Prompt) -> Result<Vec<u8>> {
        http_provider::request_bytes(&self.settings, prompt)
    }

    /// Sends one streaming request. Errors before the first event (connection, HTTP status,
    /// missing key) are returned here; errors mid-stream arrive on the stream.
    pub async fn stream(&self, prompt: &Prompt) -> Result<ResponseStream> {
        let mut stream = self.provider.stream(&self.settings, prompt).await?;
        stream.idle_timeout = Some(self.settings.stream_idle_timeout);
        Ok(stream)
    }
}

/// The next event, or `Err` with the bound when none came within it.
async fn next_within(
    events: &mut Pin<Box<dyn Stream<Item = Result<ResponseEvent>> + Send>>,
    idle: Option<Duration>,
) -> std::result::Result<Option<Result<ResponseEvent>>, Duration> {
    match idle {
        Some(idle) => tokio::time::timeout(idle, events.next())
            .await
            .map_err(|_| idle),
        None => Ok(events.next().await),
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
