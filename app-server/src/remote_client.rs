//! A client of an app-server in another process, over a websocket (`keel exec --remote`):
//! the same typed requests and events as the in-process client, so a frontend drives either.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use keel_exec_server::BearerToken;
use keel_protocol::app_server::{
    ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse, client_request,
};
use keel_protocol::{
    JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse, RequestId, RpcRequest,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::in_process::{InProcessError, InProcessEvent, typed_event};
use crate::pending_requests::PendingRequests;

/// Longest the websocket handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Events a slow consumer may leave unread before the connection waits for it.
const EVENT_CAPACITY: usize = 4096;

/// Why a remote app-server could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum RemoteConnectError {
    /// The address is not one this client speaks to.
    #[error(
        "invalid remote address `{0}`; expected `ws://host:port`, `wss://host:port` or `unix://PATH`"
    )]
    Address(String),
    /// The websocket could not be opened (refused, timed out, rejected the token).
    #[error("failed to connect to the app-server at `{url}`: {source}")]
    Connect {
        /// Where.
        url: String,
        /// Why.
        #[source]
        source: keel_exec_server::ExecServerError,
    },
    /// The unix socket could not be reached, or did not speak websocket.
    #[error("failed to connect to the app-server at `{url}`: {message}")]
    Socket {
        /// Where.
        url: String,
        /// Why.
        message: String,
    },
    /// The server answered `initialize` with an error, or went away before answering.
    #[error("the app-server at `{url}` refused to start a session: {source}")]
    Initialize {
        /// Where.
        url: String,
        /// Why.
        #[source]
        source: InProcessError,
    },
}

/// A client connected to an app-server over a websocket.
pub struct RemoteAppServerClient {
    outgoing: mpsc::UnboundedSender<Message>,
    events: tokio::sync::Mutex<mpsc::Receiver<InProcessEvent>>,
    pending: Arc<PendingRequests>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// What `initialize` answered.
    pub initialize: InitializeResponse,
}

impl Drop for RemoteAppServerClient {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl RemoteAppServerClient {
    /// Connects to `url` (`ws://`, `wss://`, or `unix://PATH` for a server listening on a
    /// unix socket), sending `token` as a bearer token (refused over plain `ws://` to a host
    /// other than this one), and performs the handshake.
    pub async fn connect(
        url: &str,
        token: Option<&BearerToken>,
        client_info: ClientInfo,
        capabilities: Option<InitializeCapabilities>,
    ) -> Result<Self, RemoteConnectError> {
        let connect_failed = |source| RemoteConnectError::Connect {
            url: url.to_string(),
            source,
        };
        if let Some(path) = url.strip_prefix("unix://").filter(|path| !path.is_empty()) {
            let socket_failed = |message: String| RemoteConnectError::Socket {
                url: url.to_string(),
                message,
            };
            let socket =
                tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::UnixStream::connect(path))
                    .await
                    .map_err(|_| socket_failed(format!("no answer in {CONNECT_TIMEOUT:?}")))?
                    .map_err(|err| socket_failed(err.to_string()))?;
            let (stream, _) = tokio_tungstenite::client_async("ws://localhost/", socket)
                .await
                .map_err(|err| socket_failed(format!("websocket handshake: {err}")))?;
            return Self::over(stream, url, client_info, capabilities).await;
        }
        if !(url.starts_with("ws://") || url.starts_with("wss://")) {
            return Err(RemoteConnectError::Address(url.to_string()));
        }
        let stream = keel_exec_server::dial_websocket(
            url,
            token,
            CONNECT_TIMEOUT,
            "connecting to the app-server",
        )
        .await
        .map_err(connect_failed)?;
        Self::over(stream, url, client_info, capabilities).await
    }

    /// The client over an open websocket: starts its reader and writer and performs the
    /// handshake.
    async fn over<S>(
        stream: tokio_tungstenite::WebSocketStream<S>,
        url: &str,
        client_info: ClientInfo,
        capabilities: Option<InitializeCapabilities>,
    ) -> Result<Self, RemoteConnectError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sink, mut stream) = stream.split();
        let (outgoing, mut outgoing_rx) = mpsc::unbounded_channel::<Message>();
        let (events_tx, events) = mpsc::channel(EVENT_CAPACITY);
        let pending = Arc::new(PendingRequests::new());
        let writer = tokio::spawn(async move {
            while let Some(message) = outgoing_rx.recv().await {
                if let Err(err) = sink.send(message).await {
                    tracing::debug!("the app-server connection closed while sending: {err}");
                    break;
                }
            }
        });
        let reader_pending = pending.clone();
        let pong = outgoing.clone();
        let reader = tokio::spawn(async move {
            while let Some(frame) = stream.next().await {
                let text = match frame {
                    Ok(Message::Text(text)) => text.to_string(),
                    Ok(Message::Binary(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                    Ok(Message::Ping(payload)) => {
                        let _ = pong.send(Message::Pong(payload));
                        continue;
                    }
                    Ok(Message::Close(_)) => break,
                    Ok(_) => continue,
                    Err(err) => {
                        tracing::debug!("the app-server connection failed: {err}");
                        break;
                    }
                };
                let message: JsonRpcMessage = match serde_json::from_str(&text) {
                    Ok(message) => message,
                    Err(err) => {
                        tracing::warn!("unreadable message from the app-server: {err}");
                        continue;
                    }
                };
                if let Some(event) = reader_pending.settle(message).and_then(typed_event)
                    && events_tx.send(event).await.is_err()
                {
                    break;
                }
            }
            reader_pending.close();
        });
        let mut client = Self {
            outgoing,
            events: tokio::sync::Mutex::new(events),
            pending,
            tasks: vec![writer, reader],
            initialize: InitializeResponse {
                user_agent: String::new(),
                platform_family: String::new(),
                platform_os: String::new(),
                codex_home: None,
            },
        };
        let initialize = client
            .request::<client_request::Initialize>(InitializeParams {
                client_info,
                capabilities,
            })
            .await
            .map_err(|source| RemoteConnectError::Initialize {
                url: url.to_string(),
                source,
            })?;
        client.initialize = initialize;
        client
            .send(
                JsonRpcNotification {
                    method: "initialized".to_string(),
                    params: None,
                }
                .into(),
            )
            .map_err(|source| RemoteConnectError::Initialize {
                url: url.to_string(),
                source,
            })?;
        Ok(client)
    }

    /// Sends a typed request and waits for its typed result.
    pub async fn request<M: RpcRequest>(
        &self,
        params: M::Params,
    ) -> Result<M::Response, InProcessError> {
        let (id, answer) = self.pending.register()?;
        self.send(
            JsonRpcRequest {
                id,
                method: M::METHOD.to_string(),
                params: Some(serde_json::to_value(params)?),
                trace: None,
            }
            .into(),
        )?;
        answer.typed().await
    }

    /// The next notification or server request; `None` once the connection is closed.
    pub async fn next_event(&self) -> Option<InProcessEvent> {
        self.events.lock().await.recv().await
    }

    /// Answers a server request.
    pub async fn respond(&self, id: RequestId, result: Value) -> Result<(), InProcessError> {
        self.send(JsonRpcResponse { id, result }.into())
    }

    fn send(&self, message: JsonRpcMessage) -> Result<(), InProcessError> {
        let text = serde_json::to_string(&message)?;
        self.outgoing
            .send(Message::text(text))
            .map_err(|_| InProcessError::Closed)
    }
}

impl crate::AppServerClient for RemoteAppServerClient {
    fn request<M: RpcRequest>(
        &self,
        params: M::Params,
    ) -> impl std::future::Future<Output = Result<M::Response, InProcessError>> + Send
    where
        M::Params: Send,
    {
        RemoteAppServerClient::request::<M>(self, params)
    }

    fn next_event(&self) -> impl std::future::Future<Output = Option<InProcessEvent>> + Send {
        RemoteAppServerClient::next_event(self)
    }

    fn respond(
        &self,
        id: RequestId,
        result: Value,
    ) -> impl std::future::Future<Output = Result<(), InProcessError>> + Send {
        std::future::ready(RemoteAppServerClient::respond_now(self, id, result))
    }

    fn shutdown(&self, _limit: Duration) -> impl std::future::Future<Output = ()> + Send {
        std::future::ready(())
    }
}

impl RemoteAppServerClient {
    fn respond_now(&self, id: RequestId, result: Value) -> Result<(), InProcessError> {
        self.send(JsonRpcResponse { id, result }.into())
    }
}
