//! One client connection, whatever the transport: reads messages, enforces the handshake,
//! queues requests for the processor (bounded: a full queue answers -32001), and runs each
//! request on its own task so long requests never block short ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use keel_protocol::app_server::{ClientRequest, InitializeParams, InitializeResponse};
use keel_protocol::{
    DEFAULT_MAX_LINE_BYTES, FrameError, INVALID_PARAMS, JsonRpcErrorObject, JsonRpcMessage,
    JsonRpcRequest, METHOD_NOT_FOUND, MethodTable,
};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::error::AppServerError;
use crate::handlers::CommandExecs;
use crate::handlers::{ConnectionContext, dispatch};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// What a transport hands the connection.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A parsed message.
    Message(JsonRpcMessage),
    /// A line or frame that is not a JSON-RPC message, and why.
    Malformed(FrameError),
}

/// Limits of one connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Requests accepted but not yet started; beyond it requests get -32001.
    pub queue_capacity: usize,
    /// Requests running at once.
    pub max_in_flight: usize,
    /// The longest line (stdio) or frame (websocket) accepted.
    pub max_line_bytes: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            queue_capacity: 256,
            max_in_flight: 64,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// How long requests already read may run to completion once the client's input has ended.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves one connection until its transport closes; then stops its requests and commands.
pub(crate) async fn serve(
    state: Arc<AppState>,
    mut incoming: mpsc::Receiver<Incoming>,
    outgoing: Arc<Outgoing>,
    limits: ConnectionLimits,
) {
    // `command/exec` runs where the engine runs the model's commands (`exec_server_url`).
    // A configuration that does not load is reported by the requests that need it.
    let remote = state
        .resolve_config(&Default::default())
        .ok()
        .and_then(|config| {
            config
                .exec_server_url
                .map(|url| crate::handlers::RemoteExecServer {
                    url,
                    token_env: config.exec_server_auth_token_env,
                    token_file: config.exec_server_auth_token_file,
                })
        });
    let context = Arc::new(ConnectionContext {
        outgoing: outgoing.clone(),
        execs: CommandExecs::new(remote),
        file_searches: Default::default(),
        fs_watches: Default::default(),
    });
    let initialized = AtomicBool::new(false);
    let _counted = ConnectionCount::enter(&state.connections);
    let (queue_tx, mut queue_rx) = mpsc::channel::<JsonRpcRequest>(limits.queue_capacity.max(1));
    let processor_state = state.clone();
    let processor_context = context.clone();
    let processor = tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
        let mut running = JoinSet::new();
        while let Some(request) = queue_rx.recv().await {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let state = processor_state.clone();
            let context = processor_context.clone();
            running.spawn(async move {
                handle(&state, &context, request).await;
                drop(permit);
            });
            while running.try_join_next().is_some() {}
        }
        // The input ended: requests already read still get their answers.
        while running.join_next().await.is_some() {}
    });

    let mut fell_behind = false;
    loop {
        let frame = tokio::select! {
            frame = incoming.recv() => frame,
            () = outgoing.disconnected() => {
                fell_behind = true;
                None
            }
        };
        let Some(frame) = frame else {
            break;
        };
        let message = match frame {
            Incoming::Message(message) => message,
            Incoming::Malformed(bad) => {
                outgoing.send(JsonRpcMessage::from(bad.to_response())).await;
                continue;
            }
        };
        match message {
            JsonRpcMessage::Request(request) if request.method == "initialize" => {
                let result = if initialized.load(Ordering::SeqCst) {
                    Err(AppServerError::AlreadyInitialized.to_rpc_error())
                } else {
                    let result = initialize(&outgoing, request.params.clone(), state.keel_home());
                    initialized.store(result.is_ok(), Ordering::SeqCst);
                    result
                };
                let first = result.is_ok();
                outgoing.respond(request.id, result).await;
                if first {
                    config_warnings(&state, &outgoing).await;
                }
            }
            JsonRpcMessage::Request(request) if !initialized.load(Ordering::SeqCst) => {
                outgoing
                    .respond(
                        request.id,
                        Err(AppServerError::NotInitialized.to_rpc_error()),
                    )
                    .await;
            }
            JsonRpcMessage::Request(request) => {
                let id = request.id.clone();
                match queue_tx.try_send(request) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        outgoing
                            .respond(id, Err(AppServerError::Overloaded.to_rpc_error()))
                            .await;
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => break,
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if notification.method != "initialized" {
                    tracing::debug!("ignoring client notification `{}`", notification.method);
                }
            }
            JsonRpcMessage::Response(response) => {
                outgoing.answer(&response.id, Ok(response.result));
            }
            JsonRpcMessage::Error(error) => match error.id {
                Some(id) => outgoing.answer(&id, Err(error.error)),
                None => tracing::warn!("client sent an error without an id: {}", error.error),
            },
        }
    }
    drop(queue_tx);
    let mut processor = processor;
    if !fell_behind
        && tokio::time::timeout(DRAIN_TIMEOUT, &mut processor)
            .await
            .is_err()
    {
        tracing::warn!("requests still running {DRAIN_TIMEOUT:?} after the input ended; stopped");
    }
    processor.abort();
    state.disconnect(outgoing.id()).await;
}

/// After the handshake: each warning of the server's configuration as a `configWarning`
/// (a configuration that does not load at all is reported by the requests that need it).
async fn config_warnings(state: &AppState, outgoing: &Outgoing) {
    let Ok(config) = state.resolve_config(&Default::default()) else {
        return;
    };
    for warning in &config.warnings {
        let path = match &warning.origin {
            keel_core::config::ConfigOrigin::File(path) => Some(path.display().to_string()),
            _ => None,
        };
        let notification = keel_protocol::app_server::ConfigWarningNotification {
            summary: warning.to_string(),
            details: warning
                .suggestion
                .as_ref()
                .map(|key| format!("did you mean `{key}`?")),
            path,
            range: None,
        };
        outgoing
            .notify(keel_protocol::app_server::ServerNotification::ConfigWarning(notification))
            .await;
    }
}

fn initialize(
    outgoing: &Outgoing,
    params: Option<serde_json::Value>,
    keel_home: &std::path::Path,
) -> Result<serde_json::Value, JsonRpcErrorObject> {
    let params: InitializeParams =
        serde_json::from_value(params.unwrap_or_default()).map_err(|err| {
            JsonRpcErrorObject::new(
                INVALID_PARAMS,
                format!("invalid params for `initialize`: {err}"),
            )
        })?;
    if let Some(methods) = params
        .capabilities
        .and_then(|c| c.opt_out_notification_methods)
    {
        outgoing.set_opted_out(methods);
    }
    let response = InitializeResponse {
        user_agent: keel_protocol::app_server::keel_user_agent(
            env!("CARGO_PKG_VERSION"),
            &params.client_info.name,
            &params.client_info.version,
        ),
        platform_family: std::env::consts::FAMILY.to_string(),
        platform_os: std::env::consts::OS.to_string(),
        codex_home: Some(keel_home.to_path_buf()),
    };
    serde_json::to_value(response)
        .map_err(|err| AppServerError::Internal(err.to_string()).to_rpc_error())
}

/// Codex methods of features Keel does not have, named so a client can tell the user why.
fn unsupported_feature(method: &str) -> Option<&'static str> {
    [("thread/realtime/", "realtime (voice) conversations")]
        .into_iter()
        .find(|(prefix, _)| method.starts_with(prefix))
        .map(|(_, feature)| feature)
}

async fn handle(state: &AppState, context: &ConnectionContext, request: JsonRpcRequest) {
    let JsonRpcRequest {
        id,
        method,
        params,
        trace,
    } = request;
    let typed = match ClientRequest::from_method_and_params(&method, params) {
        Ok(typed) => typed,
        Err(err) => {
            let error = if ClientRequest::METHODS.contains(&method.as_str()) {
                JsonRpcErrorObject::new(
                    INVALID_PARAMS,
                    format!("invalid params for `{method}`: {err}"),
                )
            } else if let Some(feature) = unsupported_feature(&method) {
                JsonRpcErrorObject::new(
                    METHOD_NOT_FOUND,
                    format!("`{method}` is not supported: Keel has no {feature}"),
                )
            } else {
                JsonRpcErrorObject::new(
                    METHOD_NOT_FOUND,
                    format!("unknown method `{}`", keel_protocol::echo_bounded(&method)),
                )
            };
            tracing::debug!(%method, code = error.code, "request refused: {}", error.message);
            context.outgoing.respond(id, Err(error)).await;
            return;
        }
    };
    tracing::debug!(%method, "request");
    let traceparent = trace.and_then(|trace| trace.traceparent);
    crate::client_trace::scope(traceparent, async {
        match dispatch(state, context, typed).await {
            Ok(reply) => {
                context.outgoing.respond_raw(id, reply.result).await;
                if let Some(after) = reply.after {
                    after.await;
                }
            }
            Err(err) => {
                let error = err.to_rpc_error();
                tracing::debug!(%method, code = error.code, "request failed: {}", error.message);
                context.outgoing.respond(id, Err(error)).await;
            }
        }
    })
    .await;
}

/// Counts a connection while it is served.
struct ConnectionCount(Arc<std::sync::atomic::AtomicUsize>);

impl ConnectionCount {
    fn enter(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for ConnectionCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
