//! The model client: one streaming request to an OpenAI-compatible provider, over the
//! wire APIs in `wire/` (Responses, Chat Completions), mapped to one stream of [`ResponseEvent`]s.
//!
//! Retries are the caller's: a failed request or a broken stream comes back as a
//! [`CoreError`] whose [`CoreError::is_retryable`] says whether to try again, so the turn loop
//! can tell the user about each retry.

mod capabilities;

mod http_provider;
mod prompt;
mod provider;
mod rate_limits;
mod request_metadata;
mod request_options;
mod response_event;
mod response_stream;
mod settings;
mod sse;
mod wire;
mod wire_decoder;
mod wire_format;

use std::sync::Arc;

use keel_protocol::ReasoningEffort;

pub use capabilities::ProviderCapabilities;

pub(crate) use http_provider::ConfiguredHttpProvider;
pub use http_provider::{ApiKeyFn, ChatApiProvider, ResponsesApiProvider};
pub use prompt::Prompt;
pub use provider::ModelProvider;
pub use request_metadata::{ROOT_AGENT, RequestMetadata};
pub use response_event::ResponseEvent;
pub use response_stream::ResponseStream;
pub use settings::ClientSettings;
pub use wire::WireApi;

use crate::error::Result;

/// `keel/<version> (<os>; <arch>)`, for providers' logs and support.
fn user_agent() -> String {
    format!(
        "keel/{} ({}; {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
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

impl ModelClient {
    /// A client for the given provider settings.
    pub fn new(settings: ClientSettings) -> Self {
        Self::with_http(http_client(), settings)
    }

    /// A client for `settings` on an existing connection pool (conversations of one
    /// process share one, so sub-agents reuse the parent's connections).
    pub fn with_http(http: reqwest::Client, settings: ClientSettings) -> Self {
        Self::with_provider(Arc::new(ConfiguredHttpProvider::new(http, None)), settings)
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

    /// What this client's provider can take beyond plain function tools.
    pub fn capabilities(&self) -> ProviderCapabilities {
        self.provider.capabilities(&self.settings)
    }

    /// The settings this client was built from.
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// The request body `prompt` becomes on this provider's wire API, as sent.
    pub fn request_bytes(&self, prompt: &Prompt) -> Result<Vec<u8>> {
        self.settings
            .wire_api
            .format()
            .request_bytes(&self.settings.request_options(), prompt)
    }

    /// Sends one streaming request. Errors before the first event (connection, HTTP status,
    /// missing key) are returned here; errors mid-stream arrive on the stream.
    pub async fn stream(&self, prompt: &Prompt) -> Result<ResponseStream> {
        let mut stream = self.provider.stream(&self.settings, prompt).await?;
        stream.idle_timeout = Some(self.settings.stream_idle_timeout);
        Ok(stream)
    }
}
