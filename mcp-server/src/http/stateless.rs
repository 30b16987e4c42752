//! MCP 2026-07-28 over HTTP: no handshake and no session. Every POST names its revision in
//! the `MCP-Protocol-Version` header and in `params._meta`, its method in `Mcp-Method` (and,
//! for calls, the tool in `Mcp-Name`); the server checks they agree with the body, answers
//! on that request's own stream, and never sends the client a request of its own: a client
//! whose call declares `elicitation` is asked its approvals through `input_required` results
//! (see `input_required`); any other is never asked (the model is told, as over stdio).
//!
//! All stateless requests share one processor, so a thread a `codex` call started can be
//! continued by `codex-reply` in a later request. Clients' ids may collide, so each request
//! runs under an id of the server's own and the client's is restored on the way out.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::response::Response;
use futures::{Stream, StreamExt};
use http::{HeaderMap, StatusCode};
use keel_protocol::{
    INVALID_PARAMS, INVALID_REQUEST, JsonRpcError, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse,
    METHOD_NOT_FOUND, RequestId,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::demux::{Demux, route_all};
use super::event_log::EventLog;
use super::input_required::{Retried, Round, WaitingCalls, cancel_call};
use super::wire::{
    Answer, OnDrop, PROTOCOL_VERSION, Present, accepted, answer_for, encode_sse_event,
    error_response, header_text, json_response, plain, sse_body_response, status_of,
};
use crate::context::ServerSettings;
use crate::methods::{MCP_STATELESS_PROTOCOL_VERSION, MCP_SUPPORTED_PROTOCOL_VERSIONS};
use crate::processor::{SERVER_NAME, server_info};
use crate::transport::Incoming;
use crate::{ProcessorMode, RunningProcessor};

/// A request header disagrees with the body, or is missing (MCP 2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request's revision is not one the server speaks (MCP 2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The `_meta` keys of a stateless request.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

const MCP_METHOD: &str = "mcp-method";
const MCP_NAME: &str = "mcp-name";

/// The methods the stateless revision has and Keel answers; any other is 404 / -32601
/// (`initialize`, `ping` and `logging/setLevel` are gone from this revision).
const METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

/// Results a client may cache (they carry `ttlMs` and `cacheScope`).
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
];

/// The stateless endpoint's shared processor.
pub(crate) struct Stateless {
    incoming: mpsc::Sender<Incoming>,
    demux: Arc<Demux>,
    waiting: Arc<WaitingCalls>,
    next_id: AtomicU64,
    _processor: AbortOnDropHandle<()>,
    _router: AbortOnDropHandle<()>,
}

impl Stateless {
    /// The shared processor; a call waiting for its client's answers is cancelled after
    /// `patience`.
    pub(crate) fn start(
        settings: ServerSettings,
        shutdown: CancellationToken,
        patience: Duration,
    ) -> Self {
        let running = RunningProcessor::start(settings, ProcessorMode::Stateless, shutdown);
        let demux = Demux::new();
        let router = tokio::spawn(route_all(running.outgoing, Arc::clone(&demux)));
        Self {
            waiting: WaitingCalls::new(running.incoming.clone(), patience),
            incoming: running.incoming,
            demux,
            next_id: AtomicU64::new(1),
            _processor: running.task,
            _router: AbortOnDropHandle::new(router),
        }
    }

    /// One stateless POST.
    pub(crate) async fn post(&self, headers: &HeaderMap, message: JsonRpcMessage) -> Response {
        let request = match message {
            JsonRpcMessage::Request(request) => request,
            JsonRpcMessage::Notification(notification) => {
                // Cancelling is closing the request's stream; nothing else is expected.
                tracing::debug!(method = %notification.method, "stateless notification ignored");
                return accepted();
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    None,
                    INVALID_REQUEST,
                    "stateless MCP has no server requests to answer",
                    None,
                );
            }
        };
        if let Err(refusal) = validate(headers, &request) {
            return *refusal;
        }
        if !METHODS.contains(&request.method.as_str()) {
            return error_response(
                StatusCode::NOT_FOUND,
                Some(request.id),
                METHOD_NOT_FOUND,
                format!(
                    "method `{}` is not available in MCP {MCP_STATELESS_PROTOCOL_VERSION} from {SERVER_NAME}",
                    request.method
                ),
                None,
            );
        }
        if request.method == "server/discover" {
            let result = decorate("server/discover", discover_result());
            let response = JsonRpcResponse {
                id: request.id,
                result,
            };
            return json_response(StatusCode::OK, &response.into());
        }
        let Some(answer) = answer_for(headers, request.method == "tools/call") else {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must include application/json or text/event-stream",
            );
        };
        let retry = request.method == "tools/call"
            && request
                .params
                .as_ref()
                .is_some_and(|params| params.get("requestState").is_some());
        if retry {
            return self.retry(request, answer).await;
        }
        self.run(request, answer).await
    }

    /// A retry answering an `input_required` result: the answers go to the waiting call,
    /// whose stream then continues on this request's answer.
    async fn retry(&self, request: JsonRpcRequest, answer: Answer) -> Response {
        let params = request.params.clone().unwrap_or(Value::Null);
        let Some(state) = params.get("requestState").and_then(Value::as_str) else {
            return error_response(
                StatusCode::BAD_REQUEST,
                Some(request.id),
                INVALID_PARAMS,
                "`requestState` must be the string an input_required result gave",
                None,
            );
        };
        let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
        let no_answers = Map::new();
        let responses = params
            .get("inputResponses")
            .and_then(Value::as_object)
            .unwrap_or(&no_answers);
        match self
            .waiting
            .retry(state, tool, responses, &self.demux)
            .await
        {
            Err(err) => error_response(
                StatusCode::BAD_REQUEST,
                Some(request.id),
                INVALID_PARAMS,
                err.to_string(),
                None,
            ),
            Ok(Retried::StillWaiting { internal, result }) => {
                let present = presenter(internal.clone(), request.id, request.method);
                let message = present(
                    &JsonRpcResponse {
                        id: internal,
                        result,
                    }
                    .into(),
                );
                let single = futures::stream::iter([(None, message)]);
                write_answer(Box::pin(single), answer).await
            }
            Ok(Retried::Continue(call)) => {
                let guard = OnDrop::new(cancel_on_drop(
                    self.incoming.clone(),
                    call.internal.clone(),
                    Arc::clone(&call.log),
                ));
                let round = Round {
                    present: presenter(call.internal.clone(), request.id, request.method),
                    internal: call.internal,
                    log: call.log,
                    after: call.after,
                    tool: call.tool,
                };
                let messages = round.messages(Arc::clone(&self.waiting), guard);
                write_answer(Box::pin(messages), answer).await
            }
        }
    }

    async fn run(&self, request: JsonRpcRequest, answer: Answer) -> Response {
        let internal = RequestId::String(format!(
            "stateless-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        let client_id = request.id.clone();
        let method = request.method.clone();
        let tool = request
            .params
            .as_ref()
            .and_then(|params| params.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let log = match self.demux.open(&internal) {
            Ok(log) => log,
            Err(_) => return plain(StatusCode::INTERNAL_SERVER_ERROR, "request id collision"),
        };
        let forwarded = JsonRpcRequest {
            id: internal.clone(),
            ..request
        };
        if self
            .incoming
            .send(Incoming::Message(forwarded.into()))
            .await
            .is_err()
        {
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
        }
        let guard = OnDrop::new(cancel_on_drop(
            self.incoming.clone(),
            internal.clone(),
            Arc::clone(&log),
        ));
        let round = Round {
            present: presenter(internal.clone(), client_id, method),
            internal,
            log,
            after: 0,
            tool,
        };
        let messages = round.messages(Arc::clone(&self.waiting), guard);
        write_answer(Box::pin(messages), answer).await
    }
}

/// A stateless answer's messages, each with its event id.
type AnswerMessages = Pin<Box<dyn Stream<Item = (Option<String>, JsonRpcMessage)> + Send>>;

/// Writes an answer as the client asked: each message as an event, or the last response
/// alone as one JSON body.
async fn write_answer(messages: AnswerMessages, answer: Answer) -> Response {
    match answer {
        Answer::Stream => {
            let events = messages.filter_map(|(id, message)| {
                std::future::ready(encode_sse_event(id.as_deref(), &message))
            });
            sse_body_response(Box::pin(events), HeaderMap::new(), None)
        }
        Answer::Json => {
            let last = messages
                .filter(|(_, message)| {
                    std::future::ready(matches!(
                        message,
                        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)
                    ))
                })
                .fold(None, |_, (_, message)| std::future::ready(Some(message)))
                .await;
            match last {
                Some(message) => json_response(status_of(&message, true), &message),
                None => plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server stopped before answering",
                ),
            }
        }
    }
}

/// When the client goes away before its answer, its call is cancelled.
fn cancel_on_drop(
    incoming: mpsc::Sender<Incoming>,
    internal: RequestId,
    log: Arc<EventLog>,
) -> Box<dyn FnOnce() + Send> {
    Box::new(move || {
        if log.is_closed() {
            return;
        }
        tracing::info!(request = %internal, "the client closed its stateless request; cancelling");
        cancel_call(&incoming, &internal, "the client disconnected");
    })
}

/// Restores the client's id and adds the fields every 2026-07-28 result carries.
fn presenter(internal: RequestId, client_id: RequestId, method: String) -> Present {
    Arc::new(move |message: &JsonRpcMessage| match message {
        JsonRpcMessage::Response(response) if response.id == internal => JsonRpcResponse {
            id: client_id.clone(),
            result: decorate(&method, response.result.clone()),
        }
        .into(),
        JsonRpcMessage::Error(error) if error.id.as_ref() == Some(&internal) => JsonRpcError {
            id: Some(client_id.clone()),
            error: error.error.clone(),
        }
        .into(),
        JsonRpcMessage::Notification(notification) => {
            let mut notification = notification.clone();
            if let Some(meta) = notification
                .params
                .as_mut()
                .and_then(|params| params.get_mut("_meta"))
                .and_then(Value::as_object_mut)
                && meta.get("requestId") == serde_json::to_value(&internal).ok().as_ref()
            {
                meta.insert(
                    "requestId".to_string(),
                    serde_json::to_value(&client_id).unwrap_or(Value::Null),
                );
            }
            notification.into()
        }
        // Nothing else belongs to this request: the call's questions become `input_required`
        // results before they get here, and other ids are other requests'.
        JsonRpcMessage::Request(_) | JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
            message.clone()
        }
    })
}

/// A result as the stateless revision shapes it: `resultType`, and cache hints where the
/// method's result is cacheable (Keel's may change with its configuration: private, no TTL).
fn decorate(method: &str, mut result: Value) -> Value {
    if let Value::Object(object) = &mut result {
        object
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
        if CACHEABLE.contains(&method) {
            object.entry("ttlMs").or_insert_with(|| json!(0));
            object
                .entry("cacheScope")
                .or_insert_with(|| json!("private"));
        }
    }
    result
}

/// What `server/discover` says: the revisions, capabilities and identity.
fn discover_result() -> Value {
    let mut versions = vec![MCP_STATELESS_PROTOCOL_VERSION];
    versions.extend(MCP_SUPPORTED_PROTOCOL_VERSIONS);
    let info = server_info();
    json!({
        "supportedVersions": versions,
        "capabilities": {
            "tools": { "listChanged": false },
            "resources": {},
            "prompts": {},
        },
        "_meta": {
            META_SERVER_INFO: {
                "name": info.name,
                "title": info.title,
                "version": info.version,
            }
        },
    })
}

/// The checks of a stateless request, in the order the revision gives them: `_meta`, then
/// the version header against it, then the version, then the method and name headers.
fn validate(headers: &HeaderMap, request: &JsonRpcRequest) -> Result<(), Box<Response>> {
    let id = Some(request.id.clone());
    let refuse = |status, code, message: String, data| {
        Box::new(error_response(status, id.clone(), code, message, data))
    };
    let meta = request
        .params
        .as_ref()
        .and_then(|params| params.get("_meta"))
        .and_then(Value::as_object);
    let Some(meta) = meta else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            INVALID_PARAMS,
            "params._meta is required: it names the protocol version and client capabilities"
                .to_string(),
            None,
        ));
    };
    let meta_version = required_meta(meta, META_PROTOCOL_VERSION)
        .map_err(|message| refuse(StatusCode::BAD_REQUEST, INVALID_PARAMS, message, None))?;
    required_meta(meta, META_CLIENT_CAPABILITIES)
        .map_err(|message| refuse(StatusCode::BAD_REQUEST, INVALID_PARAMS, message, None))?;
    let mismatch =
        |message: String| refuse(StatusCode::BAD_REQUEST, HEADER_MISMATCH, message, None);
    let header_version = header_text(headers, PROTOCOL_VERSION).map_err(mismatch)?;
    let meta_version = meta_version.as_str().unwrap_or_default();
    match header_version {
        None => return Err(mismatch("missing MCP-Protocol-Version header".to_string())),
        Some(header) if header != meta_version => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header `{header}` does not match params._meta `{meta_version}`"
            )));
        }
        Some(_) => {}
    }
    if meta_version != MCP_STATELESS_PROTOCOL_VERSION {
        let mut supported = vec![MCP_STATELESS_PROTOCOL_VERSION];
        supported.extend(MCP_SUPPORTED_PROTOCOL_VERSIONS);
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_PROTOCOL_VERSION,
            format!("unsupported protocol version `{meta_version}`"),
            Some(json!({ "supported": supported, "requested": meta_version })),
        ));
    }
    match header_text(headers, MCP_METHOD).map_err(mismatch)? {
        None => return Err(mismatch("missing Mcp-Method header".to_string())),
        Some(method) if method != request.method => {
            return Err(mismatch(format!(
                "Mcp-Method header `{method}` does not match body method `{}`",
                request.method
            )));
        }
        Some(_) => {}
    }
    let named = match request.method.as_str() {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = named {
        let expected = request
            .params
            .as_ref()
            .and_then(|params| params.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default();
        match header_text(headers, MCP_NAME).map_err(mismatch)? {
            None => {
                return Err(mismatch(format!(
                    "missing Mcp-Name header for `{}`",
                    request.method
                )));
            }
            Some(name) if name != expected => {
                return Err(mismatch(format!(
                    "Mcp-Name header `{name}` does not match params.{field} `{expected}`"
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn required_meta<'a>(meta: &'a Map<String, Value>, key: &str) -> Result<&'a Value, String> {
    meta.get(key)
        .ok_or_else(|| format!("params._meta is missing `{key}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_carry_the_fields_of_the_stateless_revision() {
        let listed = decorate("tools/list", json!({"tools": []}));
        assert_eq!(
            listed,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let called = decorate("tools/call", json!({"content": []}));
        assert_eq!(called, json!({"content": [], "resultType": "complete"}));
    }
}
