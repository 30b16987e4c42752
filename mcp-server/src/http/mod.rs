//! `keel mcp-server --listen http://IP:PORT`: MCP over Streamable HTTP at `/mcp`, beside
//! stdio. A request is routed by what it names: `Mcp-Session-Id` (or an `initialize`) goes
//! to a session (revisions up to 2025-11-25, see [`sessions`]); a request that names revision
//! 2026-07-28 or later in `MCP-Protocol-Version` is stateless (see [`stateless`]).
//!
//! Every request first passes the listener's guard, as the websocket servers' do: loopback
//! by default, `Host` and `Origin` checked against DNS rebinding, a bearer token required
//! when configured (and to listen off loopback).

mod demux;
mod event_log;
mod input_required;
mod sessions;
mod stateless;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use http::{HeaderMap, StatusCode};
use keel_exec_server::listener_auth::ListenerGuard;
use keel_protocol::{JsonRpcMessage, decode_frame};
use tokio_util::sync::CancellationToken;

use crate::error::{McpServerError, Result};
use crate::methods::MCP_SUPPORTED_PROTOCOL_VERSIONS;
use crate::{McpServerOptions, resolve_settings};
use sessions::Sessions;
use stateless::Stateless;
use wire::{PROTOCOL_VERSION, error_response, header_text, plain};

pub use stateless::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// A session nobody has used for this long (no request, no open stream, no running call)
/// is ended, with its conversations.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How long open streams get to end once the server is asked to stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where and how `keel mcp-server` listens over HTTP.
#[derive(Debug, Clone)]
pub struct HttpListenOptions {
    /// The address to bind (port 0 picks a free one; the bound address is printed).
    pub address: SocketAddr,
    /// Who may call: built from the `--ws-auth` flags for this address.
    pub guard: ListenerGuard,
    /// See [`DEFAULT_SESSION_IDLE_TIMEOUT`].
    pub session_idle_timeout: Duration,
}

/// A shutdown token cancelled by Ctrl-C (SIGINT): what both `keel mcp-server --listen` and
/// the standalone binary stop on.
pub fn shutdown_on_ctrl_c() -> CancellationToken {
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    shutdown
}

/// Reads `--listen http://IP:PORT` (a path, if given, must be `/mcp`).
pub fn parse_listen_url(url: &str) -> Result<SocketAddr> {
    let bad = |reason| McpServerError::ListenUrl {
        url: url.to_string(),
        reason,
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad("expected http://IP:PORT (put TLS in a reverse proxy in front)"))?;
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    if !path.is_empty() && path != MCP_PATH {
        return Err(bad("the endpoint is always /mcp"));
    }
    let authority = authority.replace("localhost", "127.0.0.1");
    authority
        .parse()
        .map_err(|_| bad("expected an IP address and a port, e.g. http://127.0.0.1:8765"))
}

struct HttpState {
    guard: ListenerGuard,
    sessions: Arc<Sessions>,
    stateless: Stateless,
}

/// Serves MCP over HTTP until `shutdown` is cancelled; prints `listening on http://ADDR/mcp`
/// to stderr once the port is bound.
pub async fn serve_http(
    options: McpServerOptions,
    listen: HttpListenOptions,
    shutdown: CancellationToken,
) -> Result<()> {
    let max_body = options
        .max_line_bytes
        .unwrap_or(keel_protocol::DEFAULT_MAX_LINE_BYTES);
    let settings = resolve_settings(options)?;
    let listener = tokio::net::TcpListener::bind(listen.address)
        .await
        .map_err(|source| McpServerError::Listen {
            address: listen.address,
            source,
        })?;
    let bound = listener
        .local_addr()
        .map_err(|source| McpServerError::Listen {
            address: listen.address,
            source,
        })?;
    let sessions = Sessions::new(
        settings.clone(),
        shutdown.clone(),
        listen.session_idle_timeout,
    );
    let sweeper = tokio::spawn(Arc::clone(&sessions).sweep_idle());
    let state = Arc::new(HttpState {
        guard: listen.guard,
        sessions,
        stateless: Stateless::start(settings, shutdown.clone(), listen.session_idle_timeout),
    });
    let router = Router::new()
        .route(
            MCP_PATH,
            post(handle_post).get(handle_get).delete(handle_delete),
        )
        .fallback(|| async { plain(StatusCode::NOT_FOUND, "the MCP endpoint is /mcp") })
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            check_caller,
        ))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(Arc::clone(&state));
    eprintln!("listening on http://{bound}{MCP_PATH}");
    eprintln!("  auth: {}", state.guard.describe());
    let stopping = shutdown.clone();
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(async move { stopping.cancelled().await })
        .into_future();
    tokio::pin!(served);
    let result = tokio::select! {
        result = &mut served => result,
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::debug!("streams still open {SHUTDOWN_GRACE:?} after shutdown; closing");
            Ok(())
        }
    };
    sweeper.abort();
    result.map_err(McpServerError::Write)
}

/// The listener's guard, before anything reads the body.
async fn check_caller(
    State(state): State<Arc<HttpState>>,
    request: Request,
    next: Next,
) -> Response {
    match state.guard.check_http_request(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => plain(refusal.status, refusal.message),
    }
}

async fn handle_post(
    State(state): State<Arc<HttpState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let message = match decode_frame(&body) {
        Ok(Some(message)) => message,
        Ok(None) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                None,
                keel_protocol::INVALID_REQUEST,
                "empty body: POST one JSON-RPC message",
                None,
            );
        }
        Err(bad) => {
            let response = bad.to_response();
            return error_response(
                StatusCode::BAD_REQUEST,
                response.id,
                response.error.code,
                response.error.message,
                None,
            );
        }
    };
    if is_stateless(&headers, &message) {
        state.stateless.post(&headers, message).await
    } else {
        state.sessions.post(&headers, message).await
    }
}

async fn handle_get(State(state): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    state.sessions.get_stream(&headers)
}

async fn handle_delete(State(state): State<Arc<HttpState>>, headers: HeaderMap) -> Response {
    state.sessions.delete(&headers)
}

/// A request is stateless when it names no session and either its header names a revision
/// sessions do not use, or its `_meta` names a revision.
fn is_stateless(headers: &HeaderMap, message: &JsonRpcMessage) -> bool {
    if headers.contains_key(wire::SESSION_ID) {
        return false;
    }
    if let Ok(Some(version)) = header_text(headers, PROTOCOL_VERSION)
        && !MCP_SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
    {
        return true;
    }
    let params = match message {
        JsonRpcMessage::Request(request) => request.params.as_ref(),
        JsonRpcMessage::Notification(notification) => notification.params.as_ref(),
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => None,
    };
    params
        .and_then(|params| params.get("_meta"))
        .and_then(|meta| meta.get("io.modelcontextprotocol/protocolVersion"))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_urls_are_http_with_an_address_and_port() {
        assert_eq!(
            parse_listen_url("http://127.0.0.1:0").unwrap(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            parse_listen_url("http://localhost:8080/mcp").unwrap(),
            "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
        );
        for bad in [
            "https://127.0.0.1:1",
            "127.0.0.1:1",
            "http://host:1",
            "http://127.0.0.1:1/x",
        ] {
            assert!(parse_listen_url(bad).is_err(), "{bad}");
        }
    }
}
