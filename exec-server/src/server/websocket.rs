//! The `ws://` transport: a TCP listener whose every websocket connection gets its own
//! processor, once the upgrade passed the listener's guard (no browser, a loopback `Host`
//! on loopback listeners, the bearer token when one is required).

use std::net::SocketAddr;

use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::processor::{Connection, serve_connection};
use crate::config::ExecServerConfig;
use crate::listener_auth::{HandshakeSlot, ListenerGuard, PendingHandshakes};
use crate::transport::websocket::{read_frames, write_frames};
use crate::transport::{INCOMING_CHANNEL_CAPACITY, OUTGOING_CHANNEL_CAPACITY};

/// Accepts connections until `shutdown` fires, then waits for every connection to finish
/// (each terminates and reaps its own processes).
pub(super) async fn serve_websocket(
    listener: TcpListener,
    config: ExecServerConfig,
    guard: ListenerGuard,
    shutdown: CancellationToken,
) {
    let connections = TaskTracker::new();
    let pending = PendingHandshakes::default();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let slot = pending.admit();
                connections.spawn(serve_socket(
                    stream,
                    peer,
                    slot,
                    config.clone(),
                    guard.clone(),
                    shutdown.clone(),
                ));
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
    slot: HandshakeSlot,
    config: ExecServerConfig,
    guard: ListenerGuard,
    shutdown: CancellationToken,
) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %err, "could not disable Nagle");
    }
    #[expect(
        clippy::result_large_err,
        reason = "the callback signature is tungstenite's"
    )]
    let check = |request: &Request, response: Response| check_upgrade(&guard, request, response);
    let handshake = tokio::select! {
        handshake = tokio_tungstenite::accept_hdr_async(stream, check) => handshake,
        () = slot.expired() => {
            tracing::info!(%peer, "closing a connection that did not finish its handshake in time");
            return;
        }
    };
    drop(slot);
    let websocket = match handshake {
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

/// Handshake callback: refuses what the guard refuses, with its status and reason.
#[expect(
    clippy::result_large_err,
    reason = "the callback signature is tungstenite's"
)]
fn check_upgrade(
    guard: &ListenerGuard,
    request: &Request,
    response: Response,
) -> Result<Response, ErrorResponse> {
    match guard.check_upgrade(request.headers()) {
        Ok(()) => Ok(response),
        Err(refusal) => {
            let mut answer = ErrorResponse::new(Some(refusal.message));
            *answer.status_mut() = refusal.status;
            Err(answer)
        }
    }
}
