//! The HTTP side: one handler that routes by path (with or without `/v1`), records the
//! request and answers it from the script.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::mock::capture::{CapturedRequest, Endpoint};
use crate::mock::chat::ChatRenderer;
use crate::mock::fault::Fault;
use crate::mock::invariants::Violation;
use crate::mock::responses::ResponsesRenderer;
use crate::mock::script::{OutputItem, Turn, Usage};
use crate::mock::sse::{Render, plan, play};
use crate::mock::state::Shared;

/// Answers every request the mock receives.
pub(crate) async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let route = path
        .strip_prefix("/v1")
        .filter(|rest| rest.starts_with('/'))
        .unwrap_or(&path)
        .trim_end_matches('/');
    let endpoint = match (&method, route) {
        (&Method::POST, "/responses") => Endpoint::Responses,
        (&Method::POST, "/chat/completions") => Endpoint::ChatCompletions,
        (&Method::GET, "/models") => Endpoint::Models,
        (&Method::POST, "/api/show") => Endpoint::OllamaShow,
        (&Method::GET, "/api/version") => Endpoint::OllamaVersion,
        _ => Endpoint::Unknown,
    };
    let body_len = body.len();
    let captured = shared.record(|index| capture(index, endpoint, &method, &path, &headers, &body));
    tracing::debug!(index = captured.index, ?endpoint, %path, "mock model request");
    if let Some(key) = &shared.api_key {
        let expected = format!("Bearer {key}");
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok());
        if given != Some(expected.as_str()) {
            return json_error(
                StatusCode::UNAUTHORIZED,
                "keel-mock-model: incorrect API key provided",
                "invalid_api_key",
            );
        }
    }

    match endpoint {
        Endpoint::Models => {
            let mut entry = serde_json::Map::new();
            entry.insert("id".into(), shared.model.clone().into());
            entry.insert("object".into(), "model".into());
            entry.insert("created".into(), 0.into());
            entry.insert("owned_by".into(), "keel".into());
            entry.extend(shared.metadata.list_fields.clone());
            axum::Json(json!({"object": "list", "data": [entry]})).into_response()
        }
        Endpoint::OllamaVersion => match &shared.metadata.ollama_version {
            Some(version) => axum::Json(json!({ "version": version })).into_response(),
            None => json_error(
                StatusCode::NOT_FOUND,
                "keel-mock-model: this mock is not an Ollama server",
                "not_found",
            ),
        },
        Endpoint::OllamaShow => match &shared.metadata.ollama_show {
            Some(answer) => axum::Json(answer.clone()).into_response(),
            None => json_error(
                StatusCode::NOT_FOUND,
                "keel-mock-model: this mock is not an Ollama server",
                "not_found",
            ),
        },
        Endpoint::Unknown => json_error(
            StatusCode::NOT_FOUND,
            &format!("keel-mock-model: no such endpoint: {method} {path}"),
            "not_found",
        ),
        Endpoint::Responses | Endpoint::ChatCompletions => match shared.next_turn(&captured) {
            Some(turn) => stream(&shared.model, &captured, &turn, body_len),
            None => json_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!(
                    "keel-mock-model: script exhausted: request #{} arrived but no scripted turn is left",
                    captured.index
                ),
                "script_exhausted",
            ),
        },
    }
}

fn capture(
    index: usize,
    endpoint: Endpoint,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> (CapturedRequest, Option<Violation>) {
    let mut violation = None;
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body).unwrap_or_else(|err| {
            violation = Some(Violation::InvalidJson {
                request: index,
                error: err.to_string(),
            });
            Value::Null
        })
    };
    if endpoint == Endpoint::Unknown {
        violation = Some(Violation::UnknownEndpoint {
            request: index,
            route: format!("{method} {path}"),
        });
    }
    let headers = headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let captured = CapturedRequest {
        index,
        endpoint,
        method: method.to_string(),
        path: path.to_owned(),
        headers,
        body,
    };
    (captured, violation)
}

/// Streams `turn` in the request's wire format, or fails it with its HTTP fault.
fn stream(model: &str, request: &CapturedRequest, turn: &Turn, body_len: usize) -> Response {
    let mut response = stream_body(model, request, turn, body_len);
    for (name, value) in &turn.headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

fn stream_body(model: &str, request: &CapturedRequest, turn: &Turn, body_len: usize) -> Response {
    if !turn.raw_frames.is_empty() {
        // Verbatim, with a stall where the turn's fault puts one (a server that keeps the
        // stream open after its last frame: a stall after every frame).
        let mut steps = std::collections::VecDeque::new();
        for (index, data) in turn.raw_frames.iter().enumerate() {
            // A frame that starts with `:` is an SSE comment (a gateway's keep-alive).
            let line = if data.starts_with(':') {
                format!("{data}\n\n")
            } else {
                format!("data: {data}\n\n")
            };
            steps.push_back(crate::mock::sse::Step::Send(Bytes::from(line)));
            if let Some(Fault::Stall {
                after_events,
                duration,
            }) = &turn.fault
                && *after_events == index + 1
            {
                steps.push_back(crate::mock::sse::Step::Sleep(*duration));
            }
        }
        let mut response = Response::new(Body::from_stream(play(steps)));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        return response;
    }
    if let Some(Fault::HttpStatus {
        status,
        body,
        retry_after,
    }) = &turn.fault
    {
        return http_fault(*status, body.as_deref(), retry_after.as_deref());
    }
    let usage = turn
        .usage
        .unwrap_or_else(|| estimate_usage(body_len, &turn.items));
    let mut responses;
    let mut chat;
    let renderer: &mut dyn Render = if request.endpoint == Endpoint::ChatCompletions {
        chat = ChatRenderer::new(request.index, model, &turn.items, usage);
        &mut chat
    } else {
        responses = ResponsesRenderer::new(request.index, model, &turn.items, usage);
        &mut responses
    };
    let steps = plan(renderer, turn.fault.as_ref(), turn.event_delay);
    let mut response = Response::new(Body::from_stream(play(steps)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn http_fault(status: u16, body: Option<&str>, retry_after: Option<&str>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match body {
        Some(body) => {
            let content_type = if serde_json::from_str::<Value>(body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            let mut response = (status, body.to_owned()).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            response
        }
        None => {
            let code = match status.as_u16() {
                401 => "invalid_api_key",
                429 => "rate_limit_exceeded",
                500..=599 => "server_error",
                _ => "invalid_request_error",
            };
            json_error(
                status,
                &format!("keel-mock-model: scripted HTTP {status}"),
                code,
            )
        }
    };
    if let Some(retry_after) = retry_after
        && let Ok(value) = HeaderValue::from_str(retry_after)
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

fn json_error(status: StatusCode, message: &str, code: &str) -> Response {
    let body = json!({"error": {"message": message, "type": code, "code": code}});
    (status, axum::Json(body)).into_response()
}

/// A deterministic stand-in for token counts: about four bytes per token.
fn estimate_usage(request_bytes: usize, items: &[OutputItem]) -> Usage {
    let tokens = |bytes: usize| u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX);
    let mut visible = 0;
    let mut reasoning = 0;
    for item in items {
        match item {
            OutputItem::Reasoning { text } => reasoning += text.len(),
            OutputItem::Message { text } => visible += text.len(),
            OutputItem::FunctionCall { arguments, .. } => visible += arguments.len(),
            OutputItem::ShellCall { command, .. } => {
                visible += command.iter().map(String::len).sum::<usize>()
            }
            OutputItem::CustomToolCall { input, .. } => visible += input.len(),
            OutputItem::ApplyPatchCall { patch, .. } => visible += patch.len(),
            OutputItem::Compaction { encrypted_content } => visible += encrypted_content.len(),
        }
    }
    Usage {
        input_tokens: tokens(request_bytes),
        cached_tokens: 0,
        output_tokens: tokens(visible) + tokens(reasoning),
        reasoning_tokens: tokens(reasoning),
    }
}
