//! What shapes a request body, whichever wire API carries it: the model and how it should
//! sample. A wire format reads only this, never where the request goes or with which key.

use keel_protocol::ReasoningEffort;

use crate::model_catalog::ModelCatalog;
use crate::reasoning_settings::{ReasoningSummaryMode, ServiceTier, Verbosity};

/// The sampling side of [`ClientSettings`](super::ClientSettings), borrowed for one request.
#[derive(Debug, Clone, Copy)]
pub(super) struct RequestOptions<'a> {
    /// The model to sample.
    pub model: &'a str,
    /// Reasoning effort, for models that reason.
    pub reasoning_effort: Option<&'a ReasoningEffort>,
    /// How much reasoning summary to ask for.
    pub reasoning_summary: ReasoningSummaryMode,
    /// Answer length, for models that take it.
    pub verbosity: Option<Verbosity>,
    /// The processing tier asked of the provider.
    pub service_tier: Option<ServiceTier>,
    /// Chat wire: the assistant-message field reasoning goes back in, if any.
    pub chat_reasoning_field: Option<&'a str>,
    /// Whether the model reasons, whatever the family table says.
    pub reasoning_override: Option<bool>,
    /// The models known by name, whose facts shape each request.
    pub catalog: &'a ModelCatalog,
}
