//! What a model provider can take beyond plain function tools, so the engine asks the provider
//! instead of checking which wire API it speaks.

use crate::config::WireApi;

/// What a provider's requests may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProviderCapabilities {
    /// Freeform (custom) tools, as `apply_patch` is offered to models trained on its grammar.
    pub freeform_tools: bool,
    /// Tools the provider runs itself (`web_search`).
    pub hosted_tools: bool,
}

impl ProviderCapabilities {
    /// What Keel's own client for `wire_api` can send: the Responses API takes both; Chat
    /// Completions neither.
    pub fn of_wire_api(wire_api: WireApi) -> Self {
        match wire_api {
            WireApi::Responses => Self {
                freeform_tools: true,
                hosted_tools: true,
            },
            WireApi::Chat => Self::default(),
        }
    }
}
