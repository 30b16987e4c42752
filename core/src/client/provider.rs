//! The extension point for model backends: one streaming request in, typed response events
//! out. Keel's HTTP clients (Responses and Chat Completions) implement it; so can an embedder
//! (another vendor's API, an in-process model, a recorded session).

use futures::future::BoxFuture;

use super::Prompt;
use super::capabilities::ProviderCapabilities;
use super::response_stream::ResponseStream;
use super::settings::ClientSettings;
use crate::error::Result;

/// A model backend. Retries are not its business: an error whose
/// [`CoreError::is_retryable`](crate::CoreError::is_retryable) says so is tried again by the
/// turn loop (within the configured budgets), and the user is told about each retry.
///
/// ```
/// use futures::future::BoxFuture;
/// use keel_core::{
///     ClientSettings, ContentItem, ModelProvider, Prompt, ResponseEvent, ResponseItem,
///     ResponseStream,
/// };
///
/// /// Answers every prompt with the same sentence.
/// struct Parrot;
///
/// impl ModelProvider for Parrot {
///     fn stream<'a>(
///         &'a self,
///         _settings: &'a ClientSettings,
///         _prompt: &'a Prompt,
///     ) -> BoxFuture<'a, keel_core::Result<ResponseStream>> {
///         let message = ResponseItem::Message {
///             id: None,
///             role: "assistant".into(),
///             content: vec![ContentItem::OutputText { text: "Polly says hi".into() }],
///         };
///         let events = vec![
///             Ok(ResponseEvent::OutputItemDone(message)),
///             Ok(ResponseEvent::Completed { response_id: "r1".into(), token_usage: None }),
///         ];
///         Box::pin(async move { Ok(ResponseStream::from_events(futures::stream::iter(events))) })
///     }
/// }
/// ```
pub trait ModelProvider: Send + Sync {
    /// Starts one response to `prompt`, sampled with `settings`' model and reasoning options.
    /// Errors before the first event are returned here, later ones arrive on the stream; the
    /// stream ends with [`ResponseEvent::Completed`](super::ResponseEvent::Completed).
    /// Dropping the stream (an interrupt) must stop the request.
    fn stream<'a>(
        &'a self,
        settings: &'a ClientSettings,
        prompt: &'a Prompt,
    ) -> BoxFuture<'a, Result<ResponseStream>>;

    /// What requests to this provider may carry beyond plain function tools. By default, what
    /// Keel's own client for the configured wire API can send (`settings.wire_api`).
    fn capabilities(&self, settings: &ClientSettings) -> ProviderCapabilities {
        settings.wire_api.capabilities()
    }
}
