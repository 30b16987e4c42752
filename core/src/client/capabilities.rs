//! What a model provider can take beyond plain function tools, so the engine asks the provider
//! instead of checking which wire API it speaks.

/// What a provider's requests may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ProviderCapabilities {
    /// Freeform (custom) tools, as `apply_patch` is offered to models trained on its grammar.
    pub freeform_tools: bool,
    /// Tools the provider runs itself (`web_search`).
    pub hosted_tools: bool,
    /// A conversation the provider can compact itself (a request ending in a
    /// `compaction_trigger` item), where the provider's host offers it.
    pub remote_compaction: bool,
}
