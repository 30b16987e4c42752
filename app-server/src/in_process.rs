//! The app-server without a transport, for programs that embed it (such as `keel exec`): the
//! same requests, notifications and server requests, as typed values.
//!
//! Delivery follows the contract in `delivery`: a consumer that pauses loses at most streaming
//! deltas (and is told how many, [`InProcessEvent::Lagged`]), never a `turn/completed`, an
//! `item/completed` or an approval request; the engine never waits for it. A consumer started
//! with [`EventDelivery::WaitForConsumer`] loses nothing: the engine waits for it instead.

use std::sync::Arc;

use keel_protocol::app_server::{
    ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse, ServerNotification,
    ServerRequest, client_request,
};
use keel_protocol::{
    JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, MethodTable, RequestId, RpcRequest,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use crate::client_error::InProcessError;
use crate::connection::{ConnectionLimits, Incoming, serve};
use crate::delivery::{DELIVERY_CAPACITY, Delivered, DeliveryQueue, Refused};
use crate::outgoing::Outgoing;
use crate::pending_requests::PendingRequests;
use crate::state::{AppState, ServerConfig};

/// Events buffered for the consumer. Beyond it streaming deltas are dropped (reported as
/// [`InProcessEvent::Lagged`]); a consumer that lets this many events that must arrive pile
/// up is disconnected ([`InProcessAppServerClient::next_event`] returns `None`).
pub const IN_PROCESS_EVENT_CAPACITY: usize = DELIVERY_CAPACITY;

/// What happens to events when the consumer reads more slowly than the engine produces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventDelivery {
    /// The engine never waits: streaming deltas are skipped (and counted,
    /// [`InProcessEvent::Lagged`]); for interactive consumers that want the latest state.
    #[default]
    SkipDeltasWhenBehind,
    /// Nothing is skipped: the engine pauses until the consumer has read enough (at most
    /// [`IN_PROCESS_EVENT_CAPACITY`] events wait); for consumers that record everything, such
    /// as `keel exec --json` writing to a pipe.
    WaitForConsumer,
}

/// Something the server sent that is not a response.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "boxing the notification would change the API every embedder matches on; an event \
              is moved once, through a queue"
)]
pub enum InProcessEvent {
    /// A notification.
    Notification(ServerNotification),
    /// A request the client must answer with [`InProcessAppServerClient::respond`].
    ServerRequest {
        /// Pass back with the answer.
        id: RequestId,
        /// What is asked.
        request: ServerRequest,
    },
    /// The consumer fell behind and this many streaming deltas were dropped (their content is
    /// in the `item/completed` that follows).
    Lagged {
        /// How many.
        skipped: u64,
    },
}

/// A client connected to an app-server running in this process.
pub struct InProcessAppServerClient {
    tx: mpsc::Sender<Incoming>,
    pending: Arc<PendingRequests>,
    events: Arc<DeliveryQueue>,
    tasks: Vec<JoinHandle<()>>,
    /// The server's state, for [`Self::shutdown`].
    state: Arc<AppState>,
    /// What `initialize` answered.
    pub initialize: InitializeResponse,
}

impl Drop for InProcessAppServerClient {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        // Engine pumps waiting for this consumer to make room are let go.
        self.events.close();
    }
}

impl InProcessAppServerClient {
    /// Starts a server in this process and performs the handshake; deltas are skipped for
    /// a consumer that falls behind ([`EventDelivery::SkipDeltasWhenBehind`]).
    pub async fn start(
        config: ServerConfig,
        client_info: ClientInfo,
        capabilities: Option<InitializeCapabilities>,
    ) -> Result<Self, InProcessError> {
        Self::start_with_delivery(
            config,
            client_info,
            capabilities,
            EventDelivery::SkipDeltasWhenBehind,
        )
        .await
    }

    /// Starts a server in this process with the given treatment of a slow consumer.
    pub async fn start_with_delivery(
        config: ServerConfig,
        client_info: ClientInfo,
        capabilities: Option<InitializeCapabilities>,
        delivery: EventDelivery,
    ) -> Result<Self, InProcessError> {
        let state = Arc::new(AppState::new(config));
        state.follow_spawned_threads();
        state.follow_thread_changes();
        let kept_state = Arc::clone(&state);
        let (tx, rx) = mpsc::channel(crate::transport::INCOMING_CAPACITY);
        let (outgoing_queue, events, outgoing) = match delivery {
            EventDelivery::SkipDeltasWhenBehind => {
                let queue = Arc::new(DeliveryQueue::new(DELIVERY_CAPACITY));
                let events = Arc::new(DeliveryQueue::new(IN_PROCESS_EVENT_CAPACITY));
                (queue.clone(), events, Outgoing::new(queue))
            }
            EventDelivery::WaitForConsumer => {
                let queue = Arc::new(DeliveryQueue::lossless(DELIVERY_CAPACITY));
                let events = Arc::new(DeliveryQueue::lossless(IN_PROCESS_EVENT_CAPACITY));
                (
                    queue.clone(),
                    events.clone(),
                    Outgoing::paced(queue, events),
                )
            }
        };
        let server = tokio::spawn(serve(
            state,
            rx,
            Arc::new(outgoing),
            ConnectionLimits::default(),
        ));
        let pending = Arc::new(PendingRequests::new());
        let router_pending = pending.clone();
        let router_events = events.clone();
        // Drains the connection's queue at once (so responses reach their callers whatever
        // the consumer does) and hands everything else to the consumer's queue.
        let router = tokio::spawn(async move {
            while let Some(delivered) = outgoing_queue.next().await {
                let message = match delivered {
                    Delivered::Message(message) => message.into_message(),
                    Delivered::Missed(count) => {
                        router_events.record_missed(count);
                        continue;
                    }
                };
                if route(message, &router_pending, &router_events) == Err(Refused::Overflow) {
                    tracing::warn!(
                        "the in-process client stopped reading events; disconnecting it"
                    );
                    break;
                }
            }
            router_events.close();
            router_pending.close();
        });
        let mut client = Self {
            tx,
            pending,
            events,
            tasks: vec![server, router],
            state: kept_state,
            initialize: InitializeResponse {
                user_agent: String::new(),
                platform_family: String::new(),
                platform_os: String::new(),
                codex_home: None,
            },
        };
        client.initialize = client
            .request::<client_request::Initialize>(InitializeParams {
                client_info,
                capabilities,
            })
            .await?;
        Ok(client)
    }

    /// Ends every thread as a stopping server does and waits, up to `limit`, until their
    /// engines have stopped, so a program about to exit lets end-of-session work (the
    /// `SessionEnd` hooks) finish.
    pub async fn shutdown(&self, limit: std::time::Duration) {
        self.state.shutdown_threads(limit).await;
    }

    /// Sends a typed request and waits for its typed result.
    pub async fn request<M: RpcRequest>(
        &self,
        params: M::Params,
    ) -> Result<M::Response, InProcessError> {
        let (id, answer) = self.pending.register()?;
        let request = JsonRpcRequest {
            id,
            method: M::METHOD.to_string(),
            params: Some(serde_json::to_value(params)?),
            trace: None,
        };
        self.tx
            .send(Incoming::Message(request.into()))
            .await
            .map_err(|_| InProcessError::Closed)?;
        answer.typed().await
    }

    /// The next notification or server request; `None` once the server has stopped (or
    /// gave this client up for not reading). Cancel-safe; one consumer at a time.
    pub async fn next_event(&self) -> Option<InProcessEvent> {
        loop {
            match self.events.next().await? {
                Delivered::Missed(skipped) => return Some(InProcessEvent::Lagged { skipped }),
                Delivered::Message(message) => {
                    if let Some(event) = typed_event(message.into_message()) {
                        return Some(event);
                    }
                }
            }
        }
    }

    /// Answers a server request.
    pub async fn respond(&self, id: RequestId, result: Value) -> Result<(), InProcessError> {
        self.tx
            .send(Incoming::Message(JsonRpcResponse { id, result }.into()))
            .await
            .map_err(|_| InProcessError::Closed)
    }
}

/// Settles responses with their callers; queues everything else for the consumer.
fn route(
    message: JsonRpcMessage,
    pending: &PendingRequests,
    events: &DeliveryQueue,
) -> Result<(), Refused> {
    match pending.settle(message) {
        Some(event) => events.push(event),
        None => Ok(()),
    }
}

/// A queued notification or server request as a typed event; `None` (logged) if unreadable.
pub(crate) fn typed_event(message: JsonRpcMessage) -> Option<InProcessEvent> {
    match message {
        JsonRpcMessage::Notification(notification) => {
            match ServerNotification::from_method_and_params(
                &notification.method,
                notification.params,
            ) {
                Ok(typed) => Some(InProcessEvent::Notification(typed)),
                Err(err) => {
                    tracing::warn!("unreadable notification `{}`: {err}", notification.method);
                    None
                }
            }
        }
        JsonRpcMessage::Request(request) => {
            match ServerRequest::from_method_and_params(&request.method, request.params) {
                Ok(typed) => Some(InProcessEvent::ServerRequest {
                    id: request.id,
                    request: typed,
                }),
                Err(err) => {
                    tracing::warn!("unreadable server request `{}`: {err}", request.method);
                    None
                }
            }
        }
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => None,
    }
}
