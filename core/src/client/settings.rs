//! What the client needs to talk to one provider, resolved from configuration.

use std::time::Duration;

use keel_protocol::ReasoningEffort;

use super::request_options::RequestOptions;
use super::wire::WireApi;

/// Names Keel to providers in the `originator` header.
pub(super) const ORIGINATOR: &str = "keel";

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
    pub reasoning_summary: crate::reasoning_settings::ReasoningSummaryMode,
    /// Answer length, for models that take it.
    pub verbosity: Option<crate::reasoning_settings::Verbosity>,
    /// The processing tier asked of the provider (`service_tier`).
    pub service_tier: Option<crate::reasoning_settings::ServiceTier>,
    /// Chat wire: the assistant-message field reasoning goes back in, if any.
    pub chat_reasoning_field: Option<String>,
    /// Whether the model reasons, whatever the family table says.
    pub reasoning_override: Option<bool>,
    /// How long the stream may stay silent before it counts as broken.
    pub stream_idle_timeout: Duration,
    /// The models known by name, whose facts shape each request.
    pub catalog: std::sync::Arc<crate::model_catalog::ModelCatalog>,
}

impl ClientSettings {
    /// What of these settings shapes a request body.
    pub(super) fn request_options(&self) -> RequestOptions<'_> {
        RequestOptions {
            model: &self.model,
            reasoning_effort: self.reasoning_effort.as_ref(),
            reasoning_summary: self.reasoning_summary,
            verbosity: self.verbosity,
            service_tier: self.service_tier,
            chat_reasoning_field: self.chat_reasoning_field.as_deref(),
            reasoning_override: self.reasoning_override,
            catalog: &self.catalog,
        }
    }
}
