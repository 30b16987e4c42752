//! The one place a configured wire API picks Keel's client for it: the HTTP provider, and the
//! request body it sends. Adding a wire API: a module with its request body and its
//! [`WireDecoder`](super::wire_decoder::WireDecoder), a provider in `http_provider.rs`, a
//! variant of [`WireApi`] (`config/provider.rs`), and a row in each function here.

use std::sync::Arc;

use super::{
    ApiKeyFn, ChatApiProvider, ClientSettings, ModelProvider, Prompt, ResponsesApiProvider,
};
use crate::config::WireApi;
use crate::error::Result;

/// Keel's HTTP provider for `wire_api` on `http`, taking the API key from `key` when given.
pub(crate) fn http_provider(
    wire_api: WireApi,
    http: reqwest::Client,
    key: Option<ApiKeyFn>,
) -> Arc<dyn ModelProvider> {
    match (wire_api, key) {
        (WireApi::Responses, None) => Arc::new(ResponsesApiProvider::new(http)),
        (WireApi::Responses, Some(key)) => {
            Arc::new(ResponsesApiProvider::new(http).with_api_key(key))
        }
        (WireApi::Chat, None) => Arc::new(ChatApiProvider::new(http)),
        (WireApi::Chat, Some(key)) => Arc::new(ChatApiProvider::new(http).with_api_key(key)),
    }
}

/// The request body `prompt` becomes on `settings`' wire API, as sent.
pub(super) fn request_bytes(settings: &ClientSettings, prompt: &Prompt) -> Result<Vec<u8>> {
    match settings.wire_api {
        WireApi::Responses => super::responses_api::request_bytes(settings, prompt),
        WireApi::Chat => super::chat_api::request_bytes(settings, prompt),
    }
}
