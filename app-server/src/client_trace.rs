//! The client's span for the request being handled (the `trace` member Codex 0.171's clients
//! may put on a request), so a turn it starts continues the client's trace.

use std::future::Future;

tokio::task_local! {
    static CLIENT_TRACEPARENT: Option<String>;
}

/// Runs `handling` with `traceparent` as the request's client span.
pub(crate) async fn scope<F: Future>(traceparent: Option<String>, handling: F) -> F::Output {
    CLIENT_TRACEPARENT.scope(traceparent, handling).await
}

/// The client span of the request being handled, if it sent one.
pub(crate) fn traceparent() -> Option<String> {
    CLIENT_TRACEPARENT.try_with(Clone::clone).ok().flatten()
}
