//! The per-connection processor: reads JSON-RPC messages from any transport, routes requests
//! to the connection's [`ExecServerHandler`], and merges responses and process events into
//! the transport's outgoing queue.

use std::time::Duration;

use keel_protocol::exec_server::ExecServerRequest;
use keel_protocol::{
    JsonRpcError, JsonRpcErrorObject, JsonRpcFraming, JsonRpcMessage, JsonRpcNotification,
    JsonRpcRequest, JsonRpcResponse, MethodTable, PARSE_ERROR, RequestId,
};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::config::ExecServerConfig;
use crate::error::{ExecServerError, Result};
use crate::event::ExecServerEvent;
use crate::handler::ExecServerHandler;
use crate::transport::{Frame, Outgoing};

/// Responses queued for the outbound task. Full: the processor stops reading requests until
/// the client reads its answers.
const RESPONSE_CHANNEL_CAPACITY: usize = 64;

/// How long a closing connection may take to flush what is already queued to the client.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// A transport's two queues plus the tasks that move bytes for them.
pub(crate) struct Connection {
    /// Names the peer in logs.
    pub(crate) label: String,
    /// Messages read from the peer; closed when the peer is gone.
    pub(crate) incoming: mpsc::Receiver<Frame>,
    /// Messages for the peer.
    pub(crate) outgoing: mpsc::Sender<Outgoing>,
    /// The transport's writer; awaited so queued messages are flushed before closing.
    pub(crate) writer: Option<JoinHandle<()>>,
}

/// What to do after a message.
enum Next {
    Continue,
    Close(String),
}

/// Serves one connection until the peer leaves, breaks the protocol, or `shutdown` fires;
/// then terminates and reaps every process the connection started.
pub(crate) async fn serve_connection(
    connection: Connection,
    config: ExecServerConfig,
    shutdown: CancellationToken,
) {
    let Connection {
        label,
        mut incoming,
        outgoing,
        writer,
    } = connection;
    tracing::info!(connection = %label, "connection opened");
    let (handler, events) = ExecServerHandler::new(config);
    let (responses, responses_rx) = mpsc::channel(RESPONSE_CHANNEL_CAPACITY);
    let outbound = tokio::spawn(outbound(responses_rx, events, outgoing));
    let mut processor = Processor {
        handler,
        responses,
        waits: JoinSet::new(),
    };
    let reason = loop {
        let frame = tokio::select! {
            biased;
            () = shutdown.cancelled() => break "the server is shutting down".to_string(),
            frame = incoming.recv() => frame,
        };
        while processor.waits.try_join_next().is_some() {}
        let next = match frame {
            None => Next::Close("the peer closed the connection".to_string()),
            Some(Frame::Invalid(reason)) => processor.parse_error(reason).await,
            Some(Frame::Rejected(bad)) => processor.reject(&bad).await,
            Some(Frame::Text(text)) => processor.text(text.as_bytes()).await,
            // Only client-side readers decode output notifications; from a client it is a
            // notification the protocol does not have.
            Some(Frame::Event(_)) => Next::Close(
                "protocol error: the client sent `command/exec/outputDelta`".to_string(),
            ),
            Some(Frame::Line(line)) => processor.text(&line).await,
            Some(Frame::Message(message)) => processor.handle(message).await,
        };
        if let Next::Close(reason) = next {
            break reason;
        }
    };
    tracing::info!(connection = %label, %reason, "connection closing");
    drop(incoming);
    let Processor {
        handler,
        responses,
        mut waits,
    } = processor;
    handler.shutdown().await;
    // Waits already read are answered: with their processes stopped they end at once.
    let answered = tokio::time::timeout(FLUSH_TIMEOUT, async {
        while waits.join_next().await.is_some() {}
    })
    .await;
    if answered.is_err() {
        tracing::debug!(connection = %label, "waits still pending at close; dropped");
    }
    waits.abort_all();
    drop(handler);
    drop(responses);
    flush(outbound, "outbound", &label).await;
    if let Some(writer) = writer {
        flush(writer, "writer", &label).await;
    }
    tracing::info!(connection = %label, "connection closed");
}

async fn flush(mut task: JoinHandle<()>, name: &str, label: &str) {
    if tokio::time::timeout(FLUSH_TIMEOUT, &mut task)
        .await
        .is_err()
    {
        tracing::debug!(connection = %label, task = name, "flush timed out");
        task.abort();
    }
}

/// Merges responses and events into the transport's queue: responses encoded, events as
/// they are (the writer encodes them into its own buffer). Responses go first when both are
/// ready, so a `command/exec` answer always precedes that session's output (the handler holds
/// the output back until the answer is queued).
async fn outbound(
    mut responses: mpsc::Receiver<JsonRpcMessage>,
    mut events: mpsc::Receiver<ExecServerEvent>,
    outgoing: mpsc::Sender<Outgoing>,
) {
    let mut responses_open = true;
    loop {
        let line = tokio::select! {
            biased;
            response = responses.recv(), if responses_open => match response {
                Some(response) => response
                    .to_json(JsonRpcFraming::WithoutVersion)
                    .map(Outgoing::Text),
                None => {
                    responses_open = false;
                    continue;
                }
            },
            event = events.recv() => match event {
                Some(event) => Ok(Outgoing::Event(event)),
                None if responses_open => {
                    // The handler is gone; answers may still be in flight.
                    match responses.recv().await {
                        Some(response) => response
                            .to_json(JsonRpcFraming::WithoutVersion)
                            .map(Outgoing::Text),
                        None => return,
                    }
                }
                None => return,
            },
        };
        match line {
            Ok(message) => {
                if outgoing.send(message).await.is_err() {
                    tracing::debug!("transport writer gone; dropping outgoing messages");
                    return;
                }
            }
            Err(err) => tracing::error!(%err, "could not encode an outgoing message"),
        }
    }
}

struct Processor {
    handler: ExecServerHandler,
    responses: mpsc::Sender<JsonRpcMessage>,
    /// `command/exec/wait` calls, which may take long and so run beside the processor.
    waits: JoinSet<()>,
}

impl Processor {
    async fn text(&mut self, bytes: &[u8]) -> Next {
        match keel_protocol::decode_frame(bytes) {
            Ok(Some(message)) => self.handle(message).await,
            Ok(None) => Next::Continue,
            Err(bad) => self.reject(&bad).await,
        }
    }

    /// Answers a line that is not a JSON-RPC message, then closes the connection, as
    /// `exec-server.v0` specifies (the error tells the client why).
    async fn reject(&mut self, bad: &keel_protocol::FrameError) -> Next {
        tracing::warn!(%bad, "closing the connection: not a JSON-RPC message");
        self.send(bad.to_response().into()).await;
        Next::Close(format!("protocol error: {bad}"))
    }

    async fn handle(&mut self, message: JsonRpcMessage) -> Next {
        match message {
            JsonRpcMessage::Request(request) => self.route(request).await,
            JsonRpcMessage::Notification(notification) => self.notification(notification).await,
            JsonRpcMessage::Response(JsonRpcResponse { id, .. })
            | JsonRpcMessage::Error(JsonRpcError { id: Some(id), .. }) => {
                tracing::warn!(%id, "ignoring a response: this server sends no requests");
                Next::Continue
            }
            JsonRpcMessage::Error(JsonRpcError { id: None, error }) => {
                tracing::warn!(%error, "client reported an error");
                Next::Continue
            }
        }
    }

    async fn notification(&mut self, notification: JsonRpcNotification) -> Next {
        // `initialized` is the only notification a client sends; any other one is a protocol
        // error that closes the connection (`exec-server.v0`).
        if notification.method != "initialized" {
            tracing::warn!(method = %notification.method, "closing the connection: unknown client notification");
            return Next::Close(format!(
                "protocol error: unknown client notification `{}`",
                notification.method
            ));
        }
        if let Err(err) = self.handler.initialized().await {
            tracing::warn!(%err, "ignoring `initialized`");
        }
        Next::Continue
    }

    /// Answers an unreadable message with a parse error, then closes the connection.
    async fn parse_error(&mut self, reason: String) -> Next {
        let error = JsonRpcError {
            id: None,
            error: JsonRpcErrorObject::new(
                PARSE_ERROR,
                format!("not a JSON-RPC message: {reason}"),
            ),
        };
        self.send(error.into()).await;
        Next::Close(format!("protocol error: {reason}"))
    }

    async fn route(&mut self, request: JsonRpcRequest) -> Next {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        if !ExecServerRequest::METHODS.contains(&method.as_str()) {
            let error = ExecServerError::UnknownMethod(keel_protocol::echo_bounded(&method));
            self.reply::<()>(id, Err(error)).await;
            return Next::Continue;
        }
        let request = match ExecServerRequest::from_method_and_params(&method, params) {
            Ok(request) => request,
            Err(err) => {
                let error = ExecServerError::InvalidParams(format!("`{method}`: {err}"));
                self.reply::<()>(id, Err(error)).await;
                return Next::Continue;
            }
        };
        let handler = &self.handler;
        match request {
            ExecServerRequest::Initialize(params) => {
                let result = handler.initialize(params).await;
                self.reply(id, result).await;
            }
            ExecServerRequest::Exec(params) => match handler.exec_gated(params) {
                Ok((response, gate)) => {
                    self.reply(id, Ok(response)).await;
                    drop(gate);
                }
                Err(err) => self.reply::<()>(id, Err(err)).await,
            },
            ExecServerRequest::Write(params) => {
                let result = handler.write(params).await;
                self.reply(id, result).await;
            }
            ExecServerRequest::Terminate(params) => {
                let result = handler.terminate(params).await;
                self.reply(id, result).await;
            }
            ExecServerRequest::Resize(params) => {
                let result = handler.resize(params).await;
                self.reply(id, result).await;
            }
            ExecServerRequest::CloseStdin(params) => {
                let result = handler.close_stdin(params).await;
                self.reply(id, result).await;
            }
            ExecServerRequest::Snapshot(params) => {
                let result = handler.snapshot(params).await;
                self.reply(id, result).await;
            }
            // Patches read and write files: they run beside the connection's other requests.
            ExecServerRequest::PatchPlan(params) => {
                let (handler, responses) = (handler.clone(), self.responses.clone());
                self.waits.spawn(async move {
                    let message = response_message(id, handler.plan_patch(params).await);
                    if responses.send(message).await.is_err() {
                        tracing::debug!("patch/plan answered after the connection closed");
                    }
                });
            }
            ExecServerRequest::PatchApply(params) => {
                let (handler, responses) = (handler.clone(), self.responses.clone());
                self.waits.spawn(async move {
                    let message = response_message(id, handler.apply_patch(params).await);
                    if responses.send(message).await.is_err() {
                        tracing::debug!("patch/apply answered after the connection closed");
                    }
                });
            }
            ExecServerRequest::FileRead(params) => {
                let (handler, responses) = (handler.clone(), self.responses.clone());
                self.waits.spawn(async move {
                    let message = response_message(id, handler.read_file(params).await);
                    if responses.send(message).await.is_err() {
                        tracing::debug!("fs/read answered after the connection closed");
                    }
                });
            }
            ExecServerRequest::FileList(params) => {
                let (handler, responses) = (handler.clone(), self.responses.clone());
                self.waits.spawn(async move {
                    let message = response_message(id, handler.list_dir(params).await);
                    if responses.send(message).await.is_err() {
                        tracing::debug!("fs/list answered after the connection closed");
                    }
                });
            }
            ExecServerRequest::FileStat(params) => {
                let (handler, responses) = (handler.clone(), self.responses.clone());
                self.waits.spawn(async move {
                    let message = response_message(id, handler.stat_file(params).await);
                    if responses.send(message).await.is_err() {
                        tracing::debug!("fs/stat answered after the connection closed");
                    }
                });
            }
            ExecServerRequest::Wait(params) => {
                let handler = handler.clone();
                let responses = self.responses.clone();
                self.waits.spawn(async move {
                    let message = response_message(id, handler.wait(params).await);
                    if responses.send(message).await.is_err() {
                        tracing::debug!("wait answered after the connection closed");
                    }
                });
            }
        }
        Next::Continue
    }

    async fn reply<T: Serialize>(&self, id: RequestId, result: Result<T>) {
        self.send(response_message(id, result)).await;
    }

    async fn send(&self, message: JsonRpcMessage) {
        if self.responses.send(message).await.is_err() {
            tracing::debug!("outbound task gone; response dropped");
        }
    }
}

fn response_message<T: Serialize>(id: RequestId, result: Result<T>) -> JsonRpcMessage {
    let result = result.and_then(|value| {
        serde_json::to_value(value)
            .map_err(|err| ExecServerError::Protocol(format!("encoding a response: {err}")))
    });
    match result {
        Ok(result) => JsonRpcResponse { id, result }.into(),
        Err(err) => JsonRpcError {
            id: Some(id),
            error: err.to_rpc_error(),
        }
        .into(),
    }
}
