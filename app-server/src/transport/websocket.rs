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
use tokio::sync::mpsc;

use super::{INCOMING_CAPACITY, next_for_client, parse};
use crate::connection::{ConnectionLimits, serve};
use crate::delivery::{DELIVERY_CAPACITY, DeliveryQueue};
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
    let max = shared.limits.max_line_bytes;
    ws.max_message_size(max)
        .max_frame_size(max)
        .on_upgrade(move |socket| connection(shared, socket))
}

async fn connection(shared: Shared, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (in_tx, in_rx) = mpsc::channel(INCOMING_CAPACITY);
    let queue = Arc::new(DeliveryQueue::new(DELIVERY_CAPACITY));
    let reader = tokio::spawn(async move {
        while let Some(frame) = stream.next().await {
            let incoming = match frame {
                Ok(Message::Text(text)) => parse(text.as_bytes()),
                Ok(Message::Binary(bytes)) => parse(&bytes),
                Ok(Message::Close(_)) => break,
                Err(err) => {
                    // Includes a frame over the limit: a websocket cannot skip one, so the
                    // connection ends (the peer gets close code 1009, "message too big").
                    tracing::debug!("websocket read: {err}");
                    break;
                }
                Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            };
            if let Some(incoming) = incoming
                && in_tx.send(incoming).await.is_err()
            {
                break;
            }
        }
    });
    let writer_queue = queue.clone();
    let writer = tokio::spawn(async move {
        while let Some(message) = next_for_client(&writer_queue).await {
            let Some(text) = message.line() else {
                continue;
            };
            if sink
                .feed(Message::Text(text.as_ref().into()))
                .await
                .is_err()
            {
                break;
            }
            // A burst is framed into one buffer and flushed once it is over.
            if !writer_queue.has_ready() && sink.flush().await.is_err() {
                break;
            }
        }
        if let Err(err) = sink.close().await {
            tracing::debug!("websocket close: {err}");
        }
    });
    let outgoing = Arc::new(Outgoing::new(queue));
    serve(shared.state, in_rx, outgoing.clone(), shared.limits).await;
    reader.abort();
    outgoing.close();
    // The writer sends what was queued, then closes the socket; a peer that stopped reading
    // does not hold this task up for long.
    if tokio::time::timeout(std::time::Duration::from_secs(5), writer)
        .await
        .is_err()
    {
        tracing::debug!("websocket writer did not finish; dropped");
    }
}
