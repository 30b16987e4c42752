//! The app-server without a transport, for programs that embed it (such as `keel exec`): the
//! same requests, notifications and server requests, as typed values.
//!
//! Delivery follows the contract in `delivery`: a consumer that pauses loses at most streaming
//! deltas (and is told how many, [`InProcessEvent::Lagged`]), never a `turn/completed`, an
//! `item/completed` or an approval request; the engine never waits for it. A consumer started
//! with [`EventDelivery::WaitForConsumer`] loses nothing: the engine waits for it instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use keel_protocol::app_server::{
    ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse, ServerNotification,
    ServerRequest, client_request,
};
use keel_protocol::{
    JsonRpcErrorObject, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, MethodTable, RequestId,
    RpcRequest,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::connection::{ConnectionLimits, Incoming, serve};
use crate::delivery::{DELIVERY_CAPACITY, Delivered, DeliveryQueue, Refused};
use crate::outgoing::Outgoing;
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

/// Why an in-process request failed.
#[derive(Debug, thiserror::Error)]
pub enum InProcessError {
    /// The server answered with an error (shown as its message: the code is for programs).
    #[error("{}", .0.message)]
    Rpc(JsonRpcErrorObject),
    /// The server has stopped.
    #[error("the in-process app-server has stopped")]
    Closed,
    /// A value could not be converted.
    #[error("cannot convert a message: {0}")]
    Serde(#[from] serde_json::Error),
}

/// Callers waiting for a response, by request id; `None` once responses can no longer arrive.
type Pending =
    Arc<Mutex<Option<HashMap<RequestId, oneshot::Sender<Result<Value, JsonRpcErrorObject>>>>>>;

/// A client connected to an app-server running in this process.
pub struct InProcessAppServerClient {
    tx: mpsc::Sender<Incoming>,
    next_id: AtomicI64,
    pending: Pending,
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
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
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
            // Callers still waiting for an answer, and any that ask later, get `Closed`
            // instead of waiting forever.
            lock(&router_pending).take();
        });
        let mut client = Self {
            tx,
            next_id: AtomicI64::new(1),
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
        let id = RequestId::Integer(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        match lock(&self.pending).as_mut() {
            Some(pending) => pending.insert(id.clone(), tx),
            None => return Err(InProcessError::Closed),
        };
        let request = JsonRpcRequest {
            id,
            method: M::METHOD.to_string(),
            params: Some(serde_json::to_value(params)?),
        };
        self.tx
            .send(Incoming::Message(request.into()))
            .await
            .map_err(|_| InProcessError::Closed)?;
        let result = rx.await.map_err(|_| InProcessError::Closed)?;
        let value = result.map_err(InProcessError::Rpc)?;
        Ok(serde_json::from_value(value)?)
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Settles responses with their callers; queues everything else for the consumer.
fn route(
    message: JsonRpcMessage,
    pending: &Pending,
    events: &DeliveryQueue,
) -> Result<(), Refused> {
    match message {
        JsonRpcMessage::Response(response) => {
            if let Some(tx) = lock(pending).as_mut().and_then(|p| p.remove(&response.id))
                && tx.send(Ok(response.result)).is_err()
            {
                tracing::debug!("response for a request whose caller went away");
            }
            Ok(())
        }
        JsonRpcMessage::Error(error) => {
            match error
                .id
                .and_then(|id| lock(pending).as_mut().and_then(|p| p.remove(&id)))
            {
                Some(tx) => {
                    if tx.send(Err(error.error)).is_err() {
                        tracing::debug!("error for a request whose caller went away");
                    }
                }
                None => tracing::warn!("server error without a pending request: {}", error.error),
            }
            Ok(())
        }
        event @ (JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_)) => {
            events.push(event)
        }
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
