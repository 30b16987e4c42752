//! The extension point inside Keel's HTTP client for one wire API: what a request looks like
//! on it, how its answer is read, and what it can carry. The HTTP provider sends whatever the
//! format builds, so no other code asks which wire API a provider speaks.

use super::Prompt;
use super::capabilities::ProviderCapabilities;
use super::request_options::RequestOptions;
use super::wire_decoder::WireDecoder;
use crate::error::Result;

/// One wire API Keel's HTTP client speaks.
pub(super) trait WireFormat: Send + Sync {
    /// The path of its endpoint relative to a provider's base URL.
    fn endpoint_path(&self) -> &'static str;

    /// What its requests can carry beyond plain function tools.
    fn capabilities(&self) -> ProviderCapabilities;

    /// The JSON body `prompt` becomes, as sent.
    fn request_bytes(&self, settings: &RequestOptions<'_>, prompt: &Prompt) -> Result<Vec<u8>>;

    /// A fresh decoder for the answer to `prompt`.
    fn decoder(&self, prompt: &Prompt) -> Box<dyn WireDecoder>;

    /// Headers this wire adds to the request for `prompt` (none by default).
    fn headers(
        &self,
        _settings: &RequestOptions<'_>,
        _prompt: &Prompt,
    ) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}
