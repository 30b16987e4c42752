//! The HTTP side of a message: how a request's answer is written (one JSON body, or a
//! server-sent-event stream), and the errors a transport refuses a request with.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use std::pin::Pin;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use keel_protocol::{
    JsonRpcError, JsonRpcErrorObject, JsonRpcFraming, JsonRpcMessage, METHOD_NOT_FOUND, RequestId,
};

use super::event_log::{EventLog, LoggedEvent};

/// The header naming a stateful session.
pub(crate) const SESSION_ID: &str = "mcp-session-id";
/// The header naming the protocol revision of a request.
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The header a resuming client names its last event with.
pub(crate) const LAST_EVENT_ID: &str = "last-event-id";

/// How long a client waits before reconnecting to a dropped stream (the SSE `retry` field).
const RECONNECT_DELAY: Duration = Duration::from_secs(1);
/// A comment line this often keeps proxies from closing a quiet stream (a long command).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How the client wants a request's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// `text/event-stream`: notifications as they happen, then the response.
    Stream,
    /// `application/json`: the response alone.
    Json,
}

/// What the client's `Accept` allows: a stream for a tool call (its events matter), one JSON
/// body for anything else; `None` when it takes neither.
pub(crate) fn answer_for(headers: &HeaderMap, tool_call: bool) -> Option<Answer> {
    let accepts = |wanted: &str| {
        headers.get_all(header::ACCEPT).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value.split(',').any(|range| {
                    let media = range.split(';').next().unwrap_or("").trim();
                    media == wanted || media == "*/*"
                })
            })
        })
    };
    let (stream, json) = (accepts("text/event-stream"), accepts("application/json"));
    match (stream, json) {
        (true, true) if tool_call => Some(Answer::Stream),
        (_, true) => Some(Answer::Json),
        (true, false) => Some(Answer::Stream),
        (false, false) => None,
    }
}

/// One header's text, trimmed; `Err` when it is repeated with different values or not text
/// (a client that sends two answers to one question is refused, never guessed for).
pub(crate) fn header_text<'a>(
    headers: &'a HeaderMap,
    name: &str,
) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    let first = first
        .to_str()
        .map_err(|_| format!("the {name} header is not text"))?
        .trim();
    for other in values {
        if other.to_str().ok().map(str::trim) != Some(first) {
            return Err(format!(
                "the {name} header is sent twice with different values"
            ));
        }
    }
    Ok(Some(first))
}

/// A JSON-RPC error answer with an HTTP status.
pub(crate) fn error_response(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
    data: Option<serde_json::Value>,
) -> Response {
    let mut error = JsonRpcErrorObject::new(code, message);
    error.data = data;
    json_response(status, &JsonRpcError { id, error }.into())
}

/// `message` as the whole body.
pub(crate) fn json_response(status: StatusCode, message: &JsonRpcMessage) -> Response {
    match message.to_json(JsonRpcFraming::WithVersion) {
        Ok(text) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            text,
        )
            .into_response(),
        Err(err) => {
            tracing::error!(%err, "cannot encode a response");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The HTTP status of a request's final answer given as one JSON body: an unknown method is
/// 404 on the stateless revision (the method, not the endpoint, is missing), else 200.
pub(crate) fn status_of(message: &JsonRpcMessage, stateless: bool) -> StatusCode {
    match message {
        JsonRpcMessage::Error(error) if stateless && error.error.code == METHOD_NOT_FOUND => {
            StatusCode::NOT_FOUND
        }
        JsonRpcMessage::Error(_)
        | JsonRpcMessage::Response(_)
        | JsonRpcMessage::Request(_)
        | JsonRpcMessage::Notification(_) => StatusCode::OK,
    }
}

/// `202 Accepted` with no body: a notification or a client's answer was taken.
pub(crate) fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// Plain-text refusal for requests that never reach JSON-RPC (wrong method, no session).
pub(crate) fn plain(status: StatusCode, message: impl Into<String>) -> Response {
    (status, message.into()).into_response()
}

/// Rewrites a message just before it is written (the stateless transport restores the
/// client's request id); identity for sessions.
pub(crate) type Present = Arc<dyn Fn(&JsonRpcMessage) -> JsonRpcMessage + Send + Sync>;

/// The events of `log` after sequence `after` as an SSE body. `priming` first sends the
/// stream's resumption point and reconnect delay (sessions; the stateless revision has no
/// resumption). `on_drop` runs when the client goes away or the stream ends.
pub(crate) fn sse_response(
    log: &Arc<EventLog>,
    after: u64,
    priming: bool,
    present: Present,
    extra_headers: HeaderMap,
    on_drop: Option<Box<dyn FnOnce() + Send>>,
) -> Response {
    // The priming event carries an id and an empty `data:` line, so clients record it as
    // the point to resume from.
    let first = priming.then(|| {
        Bytes::from(format!(
            "id: {}\nretry: {}\ndata: \n\n",
            log.priming_id(),
            RECONNECT_DELAY.as_millis()
        ))
    });
    let events = log
        .follow(after)
        .filter_map(move |event| std::future::ready(sse_event(event, &present)));
    let events: Pin<Box<dyn Stream<Item = Bytes> + Send>> =
        Box::pin(futures::stream::iter(first).chain(events));
    sse_body_response(events, extra_headers, on_drop)
}

/// Already-encoded SSE events as a streamed answer, kept alive through quiet spells.
/// `on_drop` runs when the client goes away or the stream ends.
pub(crate) fn sse_body_response(
    events: Pin<Box<dyn Stream<Item = Bytes> + Send>>,
    extra_headers: HeaderMap,
    on_drop: Option<Box<dyn FnOnce() + Send>>,
) -> Response {
    let body = futures::stream::unfold(
        (events, OnDrop(on_drop)),
        |(mut events, guard)| async move {
            let chunk = tokio::select! {
                chunk = events.next() => chunk?,
                () = tokio::time::sleep(KEEP_ALIVE) => Bytes::from_static(b": keep-alive\n\n"),
            };
            Some((Ok::<_, Infallible>(chunk), (events, guard)))
        },
    );
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Tell buffering proxies (nginx) to pass events through as they come.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.extend(extra_headers);
    response
}

/// One logged message as an SSE event: its id and a single `data:` line of JSON.
fn sse_event(event: LoggedEvent, present: &Present) -> Option<Bytes> {
    let message = present(event.message.as_deref()?);
    encode_sse_event(Some(&event.id), &message)
}

/// `message` as an SSE event, with `id` when the stream is resumable.
pub(crate) fn encode_sse_event(id: Option<&str>, message: &JsonRpcMessage) -> Option<Bytes> {
    match message.to_json(JsonRpcFraming::WithVersion) {
        Ok(text) => Some(Bytes::from(match id {
            Some(id) => format!("id: {id}\ndata: {text}\n\n"),
            None => format!("data: {text}\n\n"),
        })),
        Err(err) => {
            tracing::error!(%err, "cannot encode an outgoing message; dropped");
            None
        }
    }
}

/// Waits for the response at the end of `log` and writes it as one JSON body.
pub(crate) async fn json_answer(
    log: &Arc<EventLog>,
    present: Present,
    stateless: bool,
    extra_headers: HeaderMap,
) -> Response {
    let mut last = None;
    let mut events = Box::pin(log.follow(0));
    while let Some(event) = events.next().await {
        match event.message {
            Some(message)
                if matches!(
                    *message,
                    JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
                ) =>
            {
                last = Some(message);
            }
            Some(_) => {
                tracing::debug!("a JSON answer drops a notification the client did not stream");
            }
            None => {}
        }
    }
    let Some(message) = last.map(|message| present(&message)) else {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server stopped before answering",
        );
    };
    let mut response = json_response(status_of(&message, stateless), &message);
    response.headers_mut().extend(extra_headers);
    response
}

/// Runs its closure once, when dropped (a client that went away mid-answer).
pub(crate) struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl OnDrop {
    pub(crate) fn new(on_drop: Box<dyn FnOnce() + Send>) -> Self {
        Self(Some(on_drop))
    }

    /// Nothing runs on drop any more (the work it guarded was handed on).
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(on_drop) = self.0.take() {
            on_drop();
        }
    }
}

/// An empty body, for answers whose status says it all.
pub(crate) fn empty(status: StatusCode) -> Response {
    Response::builder()
        .status(status)
        .body(Body::empty())
        .unwrap_or_else(|_| status.into_response())
}
