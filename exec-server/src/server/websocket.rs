//! The `ws://` transport: a TCP listener whose every websocket connection gets its own
//! processor. Connections carrying an `Origin` header are refused, so a web page cannot
//! drive the server from a browser.

use std::net::SocketAddr;

use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{StatusCode, header};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::processor::{Connection, serve_connection};
use crate::config::ExecServerConfig;
use crate::transport::websocket::{read_frames, write_frames};
use crate::transport::{INCOMING_CHANNEL_CAPACITY, OUTGOING_CHANNEL_CAPACITY};

/// Accepts connections until `shutdown` fires, then waits for every connection to finish
/// (each terminates and reaps its own processes).
pub(super) async fn serve_websocket(
    listener: TcpListener,
    config: ExecServerConfig,
    shutdown: CancellationToken,
) {
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                connections.spawn(serve_socket(stream, peer, config.clone(), shutdown.clone()));
            }
            Err(err) => tracing::warn!(%err, "accept failed"),
        }
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

async fn serve_socket(
    stream: TcpStream,
    peer: SocketAddr,
    config: ExecServerConfig,
    shutdown: CancellationToken,
) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %err, "could not disable Nagle");
    }
    let websocket = match tokio_tungstenite::accept_hdr_async(stream, refuse_browsers).await {
        Ok(websocket) => websocket,
        Err(err) => {
            tracing::info!(%peer, %err, "websocket handshake refused or failed");
            return;
        }
    };
    let (sink, stream) = websocket.split();
    let (incoming_tx, incoming) = mpsc::channel(INCOMING_CHANNEL_CAPACITY);
    let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CHANNEL_CAPACITY);
    let reader = tokio::spawn(read_frames(stream, incoming_tx));
    let writer = tokio::spawn(write_frames(outgoing_rx, sink));
    let connection = Connection {
        label: format!("ws {peer}"),
        incoming,
        outgoing,
        writer: Some(writer),
    };
    serve_connection(connection, config, shutdown).await;
    reader.abort();
}

/// Handshake callback: a request with an `Origin` header comes from a browser; refuse it.
#[expect(
    clippy::result_large_err,
    reason = "the callback signature is tungstenite's"
)]
fn refuse_browsers(request: &Request, response: Response) -> Result<Response, ErrorResponse> {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        tracing::warn!(
            ?origin,
            "refusing a websocket connection with an Origin header"
        );
        let mut refusal = ErrorResponse::new(Some(
            "exec-server refuses connections with an Origin header".to_string(),
        ));
        *refusal.status_mut() = StatusCode::FORBIDDEN;
        return Err(refusal);
    }
    Ok(response)
}
