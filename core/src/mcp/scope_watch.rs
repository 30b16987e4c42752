//! Notices when a logged-in server refuses a request for want of scope (`403` with
//! `error="insufficient_scope"`, the MCP authorization spec's step-up signal), so the failed
//! call can say which scopes the server asks for, and the next `keel mcp login` asks for them.
//!
//! rmcp's transport ends the session on such an answer and the call only sees it go away;
//! this wrapper around the HTTP client is where the server's answer is still readable.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// The scope a server last asked for, shared between the client and the connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequiredScope(Arc<Mutex<Option<String>>>);

impl RequiredScope {
    fn record(&self, scope: String) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(scope);
    }

    /// The scope asked for since the last look, if any.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// An HTTP client that records step-up requests before passing every answer on unchanged.
#[derive(Debug, Clone)]
pub(crate) struct ScopeWatch<C> {
    inner: C,
    required: RequiredScope,
}

impl<C> ScopeWatch<C> {
    pub(crate) fn new(inner: C, required: RequiredScope) -> Self {
        Self { inner, required }
    }

    fn watch<T, E>(
        &self,
        result: Result<T, StreamableHttpError<E>>,
    ) -> Result<T, StreamableHttpError<E>>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        if let Err(StreamableHttpError::InsufficientScope(refused)) = &result {
            let scope = refused
                .required_scope
                .clone()
                .or_else(|| scope_of(&refused.www_authenticate_header));
            if let Some(scope) = scope {
                tracing::info!(%scope, "the MCP server asks for more scope");
                self.required.record(scope);
            }
        }
        result
    }
}

/// The `scope="…"` parameter of a `WWW-Authenticate` challenge.
fn scope_of(challenge: &str) -> Option<String> {
    let start = challenge.find("scope=\"")? + "scope=\"".len();
    let rest = &challenge[start..];
    Some(rest[..rest.find('"')?].to_string())
}

impl<C> StreamableHttpClient for ScopeWatch<C>
where
    C: StreamableHttpClient + Sync,
{
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let posted = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.watch(posted)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let posted = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.watch(posted)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let posted = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.watch(posted)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let opened = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        self.watch(opened)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let opened = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.watch(opened)
    }
}

#[cfg(test)]
mod tests {
    use super::scope_of;

    #[test]
    fn the_scope_is_read_from_the_challenge() {
        assert_eq!(
            scope_of(r#"Bearer scope="mcp:basic mcp:write", error="insufficient_scope""#),
            Some("mcp:basic mcp:write".to_string())
        );
        assert_eq!(scope_of("Bearer error=\"insufficient_scope\""), None);
    }
}
