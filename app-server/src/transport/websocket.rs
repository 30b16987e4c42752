//! Websocket transport on `ws://IP:PORT`: one message per text frame, `GET /readyz` and
//! `/healthz` on the same port, and no connections from browsers (requests carrying an
//! `Origin` header are refused).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use keel_protocol::{JsonRpcFraming, JsonRpcMessage};
use tokio::sync::mpsc;

use super::{INCOMING_CAPACITY, parse};
use crate::connection::{ConnectionLimits, OUTGOING_CAPACITY, serve};
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;

#[derive(Clone)]
struct Shared {
    state: Arc<AppState>,
    limits: ConnectionLimits,
}

/// Binds `addr`, prints the bound address on stderr, and serves until `shutdown` resolves.
pub(crate) async fn serve_websocket(
    state: Arc<AppState>,
    addr: SocketAddr,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| AppServerError::Transport(format!("cannot listen on {addr}: {err}")))?;
    let bound = listener
        .local_addr()
        .map_err(|err| AppServerError::Transport(err.to_string()))?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "listening on non-loopback address {bound}: anyone who can reach it can run commands"
        );
    }
    eprintln!("listening on ws://{bound}");
    let app = Router::new()
        .route("/readyz", get(|| async { "ok" }))
        .route("/healthz", get(|| async { "ok" }))
        .fallback(get(upgrade))
        .with_state(Shared { state, limits });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|err| AppServerError::Transport(err.to_string()))
}

async fn upgrade(
    State(shared): State<Shared>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if headers.contains_key(axum::http::header::ORIGIN) {
        return (
            StatusCode::FORBIDDEN,
            "browser connections (with an Origin header) are refused",
        )
            .into_response();
    }
    ws.on_upgrade(move |socket| connection(shared, socket))
}

async fn connection(shared: Shared, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (in_tx, in_rx) = mpsc::channel(INCOMING_CAPACITY);
    let (out_tx, mut out_rx) = mpsc::channel::<JsonRpcMessage>(OUTGOING_CAPACITY);
    let reader = tokio::spawn(async move {
        while let Some(frame) = stream.next().await {
            let incoming = match frame {
                Ok(Message::Text(text)) => parse(text.as_str()),
                Ok(Message::Binary(bytes)) => parse(&String::from_utf8_lossy(&bytes)),
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            };
            if in_tx.send(incoming).await.is_err() {
                break;
            }
        }
    });
    let writer = tokio::spawn(async move {
        while let Some(message) = out_rx.recv().await {
            let text = match message.to_json(JsonRpcFraming::WithoutVersion) {
                Ok(text) => text,
                Err(err) => {
                    tracing::error!("cannot serialise an outgoing message: {err}");
                    continue;
                }
            };
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
        if let Err(err) = sink.close().await {
            tracing::debug!("websocket close: {err}");
        }
    });
    serve(
        shared.state,
        in_rx,
        Arc::new(Outgoing::new(out_tx)),
        shared.limits,
    )
    .await;
    reader.abort();
    writer.abort();
}
