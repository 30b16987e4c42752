//! Websocket transport on `ws://IP:PORT` or a unix socket: one message per text frame,
//! `GET /readyz` and `/healthz` beside it, and every request through the listener's guard
//! first (no browsers, a loopback `Host` on loopback listeners, the bearer token when one is
//! required).

use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use keel_exec_server::listener_auth::{ListenerGuard, Refusal};
use tokio::sync::mpsc;

use super::handshake_guard::{GuardedListener, HandshakeTicket};
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
    guard: ListenerGuard,
}

/// Binds `addr`, prints the bound address on stderr, and serves until `shutdown` resolves.
pub(crate) async fn serve_websocket(
    state: Arc<AppState>,
    addr: SocketAddr,
    limits: ConnectionLimits,
    guard: ListenerGuard,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| AppServerError::Transport(format!("cannot listen on {addr}: {err}")))?;
    let bound = listener
        .local_addr()
        .map_err(|err| AppServerError::Transport(err.to_string()))?;
    eprintln!("listening on ws://{bound}");
    eprintln!("  auth: {}", guard.describe());
    keel_exec_server::raise_open_file_limit();
    // A turn's notifications are small frames written one after another: without this,
    // Nagle's algorithm holds each behind the client's delayed acknowledgement (~40 ms).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {err}");
        }
    });
    axum::serve(
        GuardedListener::new(listener),
        router(state, limits, guard).into_make_service_with_connect_info::<HandshakeTicket>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .map_err(|err| AppServerError::Transport(err.to_string()))
}

/// Creates the unix socket at `path` (mode 0600, in a directory created 0700 when missing),
/// serves websocket connections on it until `shutdown` resolves, then removes it.
pub(crate) async fn serve_unix_socket(
    state: Arc<AppState>,
    path: PathBuf,
    limits: ConnectionLimits,
    guard: ListenerGuard,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = bind_private_socket(&path).await?;
    eprintln!("listening on unix://{}", path.display());
    eprintln!("  auth: {}", guard.describe());
    keel_exec_server::raise_open_file_limit();
    let served = axum::serve(
        GuardedListener::new(listener),
        router(state, limits, guard).into_make_service_with_connect_info::<HandshakeTicket>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
    .map_err(|err| AppServerError::Transport(err.to_string()));
    if let Err(err) = std::fs::remove_file(&path) {
        tracing::debug!("removing {}: {err}", path.display());
    }
    served
}

async fn bind_private_socket(path: &Path) -> Result<tokio::net::UnixListener> {
    let transport = |what: &str, err: std::io::Error| {
        AppServerError::Transport(format!("{what} {}: {err}", path.display()))
    };
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
        && !parent.exists()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|err| transport("cannot create the directory of", err))?;
    }
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(transport("cannot inspect", err)),
        Ok(metadata) if !metadata.file_type().is_socket() => {
            // Never delete what is not ours: a typo in --listen must not cost a file.
            return Err(AppServerError::Transport(format!(
                "{} exists and is not a socket; remove it or listen on another path",
                path.display()
            )));
        }
        Ok(_) => {
            // A socket left by a server that died can be replaced; a live one cannot.
            if tokio::net::UnixStream::connect(path).await.is_ok() {
                return Err(AppServerError::Transport(format!(
                    "another server is already listening on {}",
                    path.display()
                )));
            }
            std::fs::remove_file(path).map_err(|err| transport("cannot remove the stale", err))?;
        }
    }
    bind_with_final_mode(path).map_err(|err| transport("cannot listen on", err))
}

/// Binds the socket where nobody else can reach it yet (a private directory beside `path`),
/// makes it 0600, and only then moves it to `path`, so it never exists there with the
/// umask's mode. The move does not replace anything that appeared at `path` meanwhile.
fn bind_with_final_mode(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".keel-socket-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)?;
    let staged = staging.path().join("s");
    let listener = tokio::net::UnixListener::bind(&staged)?;
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
    nix::fcntl::renameat2(
        nix::fcntl::AT_FDCWD,
        &staged,
        nix::fcntl::AT_FDCWD,
        path,
        nix::fcntl::RenameFlags::RENAME_NOREPLACE,
    )
    .map_err(std::io::Error::from)?;
    Ok(listener)
}

fn router(state: Arc<AppState>, limits: ConnectionLimits, guard: ListenerGuard) -> Router {
    Router::new()
        .route("/readyz", get(ready))
        .route("/healthz", get(health))
        .fallback(get(upgrade))
        .with_state(Shared {
            state,
            limits,
            guard,
        })
}

fn refused(refusal: Refusal) -> Response {
    (refusal.status, refusal.message).into_response()
}

/// Ready for new clients: not draining, and the threads reachable (`503` naming why not).
async fn ready(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if let Err(refusal) = shared.guard.check_host(&headers) {
        return refused(refusal);
    }
    match shared.state.readiness().await {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

/// Alive (whether or not it takes new clients).
async fn health(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    match shared.guard.check_host(&headers) {
        Ok(()) => (StatusCode::OK, "ok").into_response(),
        Err(refusal) => refused(refusal),
    }
}

/// Each connection's read buffer. Clients' requests are small, and tungstenite's default
/// (128 KiB, zeroed before every read) cost 26 MiB across 200 connected clients; a frame
/// larger than this still gets room for its whole length.
const READ_BUFFER_BYTES: usize = 8 * 1024;

async fn upgrade(
    State(shared): State<Shared>,
    ConnectInfo(ticket): ConnectInfo<HandshakeTicket>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if let Err(refusal) = shared.guard.check_upgrade(&headers) {
        return refused(refusal);
    }
    ticket.passed();
    let max = shared.limits.max_line_bytes;
    ws.max_message_size(max)
        .max_frame_size(max)
        .read_buffer_size(READ_BUFFER_BYTES)
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
