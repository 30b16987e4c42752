//! The client: typed methods for every request over stdio handles, a websocket, or an
//! in-process handler, and a broadcast of output and exit events.

mod local;
mod remote;

use std::time::Duration;

use keel_protocol::exec_server::exec_server_request as method;
use keel_protocol::exec_server::{
    CloseStdinParams, CloseStdinResponse, EXEC_SERVER_EXTENSIONS, EXEC_SERVER_PROTOCOL_VERSION,
    ExecParams, ExecResponse, FileListParams, FileListResponse, FileReadParams, FileReadResponse,
    FileStatParams, FileStatResponse, InitializeParams, PatchApplyResponse, PatchParams,
    PatchPlanResponse, ResizeParams, ResizeResponse, SnapshotParams, SnapshotResponse,
    TerminateParams, TerminateResponse, WaitParams, WaitResponse, WriteParams, WriteResponse,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc};
use tokio_util::task::AbortOnDropHandle;

use self::remote::Remote;
use crate::config::ExecServerConfig;
use crate::error::{ExecServerError, Result};
use crate::event::ExecServerEvent;
use crate::handler::ExecServerHandler;
use crate::transport::{INCOMING_CHANNEL_CAPACITY, OUTGOING_CHANNEL_CAPACITY, lines, websocket};

pub use self::local::{LocalExecServer, LocalExecServerOptions, spawn_local_exec_server};

/// How a client connects and delivers events.
#[derive(Debug, Clone)]
pub struct ExecServerClientOptions {
    /// Sent in `initialize`, for the server's logs.
    pub client_name: String,
    /// Limit on opening a websocket connection.
    pub connect_timeout: Duration,
    /// Limit on the `initialize` round trip.
    pub initialize_timeout: Duration,
    /// Events each subscriber may fall behind before it misses some (see
    /// [`ExecServerClient::subscribe`]). The broadcast ring keeps this many events alive, so
    /// it also bounds the client's buffered output (at most 256 KiB per event).
    pub event_capacity: usize,
    /// Sent as `Authorization: Bearer …` when connecting over a websocket, for a server
    /// started with `--ws-auth`.
    pub bearer_token: Option<BearerToken>,
}

/// A token a client was given for a server's `--ws-auth`; its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token, without surrounding whitespace.
    pub fn new(token: &str) -> Self {
        Self(token.trim().to_string())
    }

    /// The token itself, for the `Authorization` header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl Default for ExecServerClientOptions {
    fn default() -> Self {
        Self {
            client_name: "keel-exec-server-client".to_string(),
            connect_timeout: Duration::from_secs(10),
            initialize_timeout: Duration::from_secs(10),
            event_capacity: 256,
            bearer_token: None,
        }
    }
}

enum Backend {
    Remote(Remote),
    InProcess(ExecServerHandler),
}

/// A connection to an exec-server (or an in-process handler), already initialized.
///
/// Dropping it closes the connection, which makes the server terminate every process the
/// connection started.
pub struct ExecServerClient {
    backend: Backend,
    /// The extensions the server announced in `initialize`.
    extensions: Vec<String>,
    events: broadcast::WeakSender<ExecServerEvent>,
    _tasks: Vec<AbortOnDropHandle<()>>,
}

impl ExecServerClient {
    /// Connects over a byte stream pair speaking newline-delimited JSON (e.g. a child's
    /// stdout and stdin), then performs the handshake.
    pub async fn connect_stdio<R, W>(
        reader: R,
        writer: W,
        options: ExecServerClientOptions,
    ) -> Result<Self>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_CHANNEL_CAPACITY);
        let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CHANNEL_CAPACITY);
        let tasks = vec![
            AbortOnDropHandle::new(tokio::spawn(lines::read_lines(reader, incoming_tx))),
            AbortOnDropHandle::new(tokio::spawn(lines::write_lines(outgoing_rx, writer))),
        ];
        Self::over_frames(incoming, outgoing, tasks, options).await
    }

    /// Connects to `ws://IP:PORT` within the connect timeout, then performs the handshake
    /// within the initialize timeout.
    pub async fn connect_websocket(url: &str, options: ExecServerClientOptions) -> Result<Self> {
        use futures::StreamExt;

        let stream = dial_websocket(
            url,
            options.bearer_token.as_ref(),
            options.connect_timeout,
            "connecting to the exec-server",
        )
        .await?;
        if let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = stream.get_ref()
            && let Err(err) = tcp.set_nodelay(true)
        {
            tracing::debug!(%err, "could not disable Nagle");
        }
        let (sink, stream) = stream.split();
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_CHANNEL_CAPACITY);
        let (outgoing, outgoing_rx) = mpsc::channel(OUTGOING_CHANNEL_CAPACITY);
        let tasks = vec![
            AbortOnDropHandle::new(tokio::spawn(websocket::read_frames(stream, incoming_tx))),
            AbortOnDropHandle::new(tokio::spawn(websocket::write_frames(outgoing_rx, sink))),
        ];
        Self::over_frames(incoming, outgoing, tasks, options).await
    }

    /// Runs a handler in this process and drives it directly: no JSON, no transport.
    pub async fn in_process(
        config: ExecServerConfig,
        options: ExecServerClientOptions,
    ) -> Result<Self> {
        let (handler, mut handler_events) = ExecServerHandler::new(config);
        let (events, _) = broadcast::channel(options.event_capacity);
        let weak = events.downgrade();
        let forward = tokio::spawn(async move {
            while let Some(event) = handler_events.recv().await {
                if events.send(event).is_err() {
                    tracing::trace!("event dropped: no subscriber");
                }
            }
        });
        handler
            .initialize(InitializeParams {
                client_name: options.client_name.clone(),
            })
            .await?;
        handler.initialized().await?;
        Ok(Self {
            backend: Backend::InProcess(handler),
            extensions: EXEC_SERVER_EXTENSIONS
                .iter()
                .map(ToString::to_string)
                .collect(),
            events: weak,
            _tasks: vec![AbortOnDropHandle::new(forward)],
        })
    }

    async fn over_frames(
        incoming: mpsc::Receiver<crate::transport::Frame>,
        outgoing: mpsc::Sender<String>,
        mut tasks: Vec<AbortOnDropHandle<()>>,
        options: ExecServerClientOptions,
    ) -> Result<Self> {
        let (events, _) = broadcast::channel(options.event_capacity);
        let weak = events.downgrade();
        let (remote, reader) = Remote::new(incoming, outgoing, events);
        tasks.push(AbortOnDropHandle::new(tokio::spawn(reader)));
        let initialize = remote.request::<method::Initialize>(InitializeParams {
            client_name: options.client_name.clone(),
        });
        let response = tokio::time::timeout(options.initialize_timeout, initialize)
            .await
            .map_err(|_| ExecServerError::Timeout {
                what: "initializing the connection",
                timeout: options.initialize_timeout,
            })??;
        if response.protocol_version != EXEC_SERVER_PROTOCOL_VERSION {
            return Err(ExecServerError::UnsupportedVersion(
                response.protocol_version,
            ));
        }
        remote.notify_initialized().await?;
        Ok(Self {
            backend: Backend::Remote(remote),
            extensions: response.extensions,
            events: weak,
            _tasks: tasks,
        })
    }

    /// A receiver of every output and exit event from now on.
    ///
    /// Subscribe before `exec` to see a process's first output. A subscriber more than
    /// `event_capacity` events behind gets `RecvError::Lagged` and misses those events
    /// (broadcast semantics; the server is never slowed by a slow subscriber here): use
    /// `snapshot` to recover. Once the connection is gone, receivers report `Closed`.
    pub fn subscribe(&self) -> broadcast::Receiver<ExecServerEvent> {
        match self.events.upgrade() {
            Some(events) => events.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// Whether the server announced `extension` (e.g. [`keel_protocol::exec_server::PATCH_EXTENSION`]) in `initialize`.
    pub fn supports(&self, extension: &str) -> bool {
        self.extensions.iter().any(|e| e == extension)
    }

    /// Whether the connection is gone (a remote server closed it or became unreachable):
    /// every request fails from then on.
    pub fn is_closed(&self) -> bool {
        self.events.upgrade().is_none()
    }

    /// `patch/plan`: checks a patch against the server's files and the sandbox policy.
    pub async fn plan_patch(&self, params: PatchParams) -> Result<PatchPlanResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::PatchPlan>(params).await,
            Backend::InProcess(handler) => handler.plan_patch(params).await,
        }
    }

    /// `patch/apply`: applies a patch on the server's host, all or nothing.
    pub async fn apply_patch(&self, params: PatchParams) -> Result<PatchApplyResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::PatchApply>(params).await,
            Backend::InProcess(handler) => handler.apply_patch(params).await,
        }
    }

    /// `fs/read`: a file of the server's host (`fs.v1`).
    pub async fn read_file(&self, params: FileReadParams) -> Result<FileReadResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::FileRead>(params).await,
            Backend::InProcess(handler) => handler.read_file(params).await,
        }
    }

    /// `fs/list`: a directory of the server's host (`fs.v1`).
    pub async fn list_dir(&self, params: FileListParams) -> Result<FileListResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::FileList>(params).await,
            Backend::InProcess(handler) => handler.list_dir(params).await,
        }
    }

    /// `fs/stat`: whether a path of the server's host exists, and what it is (`fs.v1`).
    pub async fn stat_file(&self, params: FileStatParams) -> Result<FileStatResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::FileStat>(params).await,
            Backend::InProcess(handler) => handler.stat_file(params).await,
        }
    }

    /// `command/exec`: starts a process.
    pub async fn exec(&self, params: ExecParams) -> Result<ExecResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::Exec>(params).await,
            Backend::InProcess(handler) => handler.exec(params).await,
        }
    }

    /// `command/exec/write`: writes bytes to a PTY-backed process.
    pub async fn write(&self, params: WriteParams) -> Result<WriteResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::Write>(params).await,
            Backend::InProcess(handler) => handler.write(params).await,
        }
    }

    /// `command/exec/terminate`: signals a process (gracefully unless `mode` says `force`).
    pub async fn terminate(&self, params: TerminateParams) -> Result<TerminateResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::Terminate>(params).await,
            Backend::InProcess(handler) => handler.terminate(params).await,
        }
    }

    /// `command/exec/resize`: changes a PTY's window size.
    pub async fn resize(&self, params: ResizeParams) -> Result<ResizeResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::Resize>(params).await,
            Backend::InProcess(handler) => handler.resize(params).await,
        }
    }

    /// `command/exec/closeStdin`: the process sees end of input.
    pub async fn close_stdin(&self, params: CloseStdinParams) -> Result<CloseStdinResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::CloseStdin>(params).await,
            Backend::InProcess(handler) => handler.close_stdin(params).await,
        }
    }

    /// `command/exec/wait`: waits for the exit, up to the optional timeout.
    ///
    /// Cancel safe (a remote answer that arrives later is discarded).
    pub async fn wait(&self, params: WaitParams) -> Result<WaitResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::Wait>(params).await,
            Backend::InProcess(handler) => handler.wait(params).await,
        }
    }

    /// `command/exec/snapshot`: retained output and state of a process.
    pub async fn snapshot(&self, params: SnapshotParams) -> Result<SnapshotResponse> {
        match &self.backend {
            Backend::Remote(remote) => remote.request::<method::Snapshot>(params).await,
            Backend::InProcess(handler) => handler.snapshot(params).await,
        }
    }

    /// Closes the connection; an in-process handler terminates its processes gracefully
    /// before this returns.
    pub async fn shutdown(self) {
        if let Backend::InProcess(handler) = &self.backend {
            handler.shutdown().await;
        }
    }
}

/// A websocket connected to a Keel server at `url` (`ws://` or `wss://`), sending `token`
/// as `Authorization: Bearer …` (refused over plain `ws://` to another host), within
/// `timeout`; `what` names the attempt in errors. Shared by every Keel websocket client.
pub async fn dial_websocket(
    url: &str,
    token: Option<&BearerToken>,
    timeout: Duration,
    what: &'static str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
> {
    let request = websocket_request(url, token)?;
    let tls = if request.uri().scheme_str() == Some("wss") {
        Some(tls_connector()?)
    } else {
        None
    };
    let connect = tokio_tungstenite::connect_async_tls_with_config(request, None, true, tls);
    let (stream, _response) = tokio::time::timeout(timeout, connect)
        .await
        .map_err(|_| ExecServerError::Timeout { what, timeout })?
        .map_err(ExecServerError::ws(what))?;
    Ok(stream)
}

/// TLS for `wss://`: rustls with the ring provider, certificates checked against the
/// system's roots (`SSL_CERT_FILE` / `SSL_CERT_DIR` name others), as for the model's HTTPS.
fn tls_connector() -> Result<tokio_tungstenite::Connector> {
    use rustls_platform_verifier::BuilderVerifierExt;

    let tls_error = |err: rustls::Error| ExecServerError::Tls(err.to_string());
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_platform_verifier()
        .map_err(tls_error)?
        .with_no_client_auth();
    Ok(tokio_tungstenite::Connector::Rustls(std::sync::Arc::new(
        config,
    )))
}

/// Whether a bearer token may be sent to `url`: over `wss://`, or to a loopback host (over
/// plain `ws://` to another host anyone on the path could read it).
pub fn token_may_go_to(url: &str) -> bool {
    let Ok(uri) = url.parse::<tokio_tungstenite::tungstenite::http::Uri>() else {
        return false;
    };
    let host = uri.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback || uri.scheme_str() == Some("wss")
}

/// The upgrade request for `url`, with the bearer token when there is one (only where
/// [`token_may_go_to`] allows it).
fn websocket_request(
    url: &str,
    token: Option<&BearerToken>,
) -> Result<tokio_tungstenite::tungstenite::handshake::client::Request> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::http::HeaderValue;

    let mut request = url
        .into_client_request()
        .map_err(ExecServerError::ws("reading the exec-server URL"))?;
    let Some(token) = token else {
        return Ok(request);
    };
    if !token_may_go_to(url) {
        return Err(ExecServerError::TokenOverPlaintext(url.to_string()));
    }
    let value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| {
        ExecServerError::InvalidParams("the bearer token is not a valid header value".into())
    })?;
    request.headers_mut().insert("authorization", value);
    Ok(request)
}
