//! The agent: the editor's requests carried out on the in-process app-server, and the
//! server's events carried back to the editor.

use std::sync::Arc;
use std::time::Duration;

use keel_app_server::{EventDelivery, InProcessAppServerClient, InProcessEvent, ServerConfig};
use keel_protocol::acp::{
    ACP_PROTOCOL_VERSION, AcpClientNotification, AcpClientRequest, AgentCapabilities,
    CancelNotification, ClientCapabilities, EmptyObject, Implementation, InitializeRequest,
    InitializeResponse, McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    SessionCapabilities, SessionUpdate, SetSessionConfigOptionResponse, StopReason,
    ToolCallContent,
};
use keel_protocol::app_server::{
    ClientInfo, CommandExecutionApprovalDecision, ModelListParams, ServerNotification,
    ThreadOverrides, ThreadSettings, ThreadStartParams, TurnInterruptParams, TurnStatus,
    client_request,
};
use keel_protocol::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JsonRpcErrorObject, JsonRpcMessage,
    JsonRpcNotification, JsonRpcRequest, METHOD_NOT_FOUND, MethodTable, PARSE_ERROR, RequestId,
};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use crate::error::AcpError;
use crate::sessions::Sessions;
use crate::wire::Wire;

/// JSON-RPC's code for a request its sender withdrew (`$/cancel_request`).
const REQUEST_CANCELLED: i64 = -32800;

/// How long the engine gets to stop its threads once the editor is gone.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long requests already sent get to finish once the editor's input ends.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// The agent of one editor connection.
pub(crate) struct Agent {
    pub(crate) client: Arc<InProcessAppServerClient>,
    pub(crate) wire: Wire,
    pub(crate) sessions: Arc<Sessions>,
    /// What the editor offered at `initialize` (its files and terminals are used by them).
    pub(crate) capabilities: Arc<std::sync::Mutex<ClientCapabilities>>,
    /// The running prompts by request id: their session, and whether the editor withdrew
    /// the request.
    prompts: std::sync::Mutex<std::collections::HashMap<RequestId, (String, bool)>>,
    /// The model catalogue, asked once.
    models: tokio::sync::OnceCell<Vec<keel_protocol::app_server::Model>>,
    /// How the engine was set up (for the configured writable roots).
    pub(crate) server: ServerConfig,
    /// Whether an editor that asks for the draft v2 gets it.
    protocol_v2: bool,
}

type Answer = Result<Value, JsonRpcErrorObject>;

fn error(code: i64, message: impl Into<String>) -> JsonRpcErrorObject {
    JsonRpcErrorObject::new(code, message)
}

impl Agent {
    /// Starts the engine and the writer, and begins forwarding the engine's events.
    pub(crate) async fn start<W>(
        mut config: ServerConfig,
        options: crate::options::AcpOptions,
        output: W,
    ) -> Result<Arc<Self>, AcpError>
    where
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let wire = Wire::start(output);
        let sessions: Arc<Sessions> = Arc::default();
        let capabilities: Arc<std::sync::Mutex<ClientCapabilities>> = Arc::default();
        let editor = Arc::new(crate::editor::Editor::new(
            wire.clone(),
            Arc::clone(&capabilities),
            Arc::clone(&sessions),
        ));
        let server = config.clone();
        config.client_backends = keel_core::ClientBackends::default()
            .with_files(Arc::new(crate::editor::EditorFiles(Arc::clone(&editor))))
            .with_terminals(Arc::new(crate::editor::EditorTerminals(editor)));
        let client = InProcessAppServerClient::start_with_delivery(
            config,
            ClientInfo {
                name: "keel_acp".to_string(),
                title: None,
                version: env!("CARGO_PKG_VERSION").to_string(),
            },
            None,
            // The editor renders everything it is sent: nothing may be skipped.
            EventDelivery::WaitForConsumer,
        )
        .await?;
        let agent = Arc::new(Self {
            client: Arc::new(client),
            wire,
            sessions,
            capabilities,
            models: tokio::sync::OnceCell::new(),
            prompts: Default::default(),
            server,
            protocol_v2: options.protocol_v2,
        });
        let events = Arc::clone(&agent);
        tokio::spawn(async move { events.forward_events().await });
        Ok(agent)
    }

    /// Reads the editor's messages until its input ends, then stops the engine.
    pub(crate) async fn run<R>(self: Arc<Self>, input: R) -> Result<(), AcpError>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
    {
        let mut lines = tokio::io::BufReader::new(input).lines();
        let mut requests = tokio::task::JoinSet::new();
        while let Some(line) = lines.next_line().await.map_err(AcpError::Input)? {
            if line.trim().is_empty() {
                continue;
            }
            match JsonRpcMessage::from_json(&line) {
                Ok(JsonRpcMessage::Request(request)) => {
                    // The version is settled before the next message is read.
                    if request.method == "initialize" && self.asks_for_v2(&request) {
                        self.wire.speak_v2();
                    }
                    let agent = Arc::clone(&self);
                    if self.wire.v2().is_some() {
                        requests.spawn(async move { agent.handle_request_v2(request).await });
                    } else {
                        requests.spawn(async move { agent.handle_request(request).await });
                    }
                    // Finished requests are reaped as the session goes on.
                    while requests.try_join_next().is_some() {}
                }
                Ok(JsonRpcMessage::Notification(notification)) => {
                    self.handle_notification(notification).await;
                }
                Ok(JsonRpcMessage::Response(response)) => {
                    self.wire.answered(&response.id, Ok(response.result));
                }
                Ok(JsonRpcMessage::Error(failed)) => match failed.id {
                    Some(id) => self.wire.answered(&id, Err(failed.error)),
                    None => tracing::warn!("the editor reported an error: {}", failed.error),
                },
                Err(err) => match readable_id(&line) {
                    // JSON with an id, but not a request, answer or error (no `method`, say).
                    Some(id) => {
                        self.wire
                            .respond(
                                id,
                                Err(error(
                                    INVALID_REQUEST,
                                    format!("not a JSON-RPC request: {err}"),
                                )),
                            )
                            .await;
                    }
                    None => {
                        self.wire
                            .unreadable(error(
                                PARSE_ERROR,
                                format!("not a JSON-RPC message: {err}"),
                            ))
                            .await;
                    }
                },
            }
        }
        // The editor is gone: what it already asked is answered (a prompt still running is
        // stopped with the engine), and everything is written before the process ends.
        let drained = tokio::time::timeout(DRAIN_GRACE, async {
            while requests.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            requests.abort_all();
        }
        self.client.shutdown(SHUTDOWN_GRACE).await;
        self.wire.flush().await;
        Ok(())
    }

    /// Whether this `initialize` asks for the draft v2 and the agent may speak it.
    fn asks_for_v2(&self, request: &JsonRpcRequest) -> bool {
        self.protocol_v2
            && request
                .params
                .as_ref()
                .and_then(|params| params.get("protocolVersion"))
                .and_then(Value::as_u64)
                .is_some_and(|version| {
                    version >= u64::from(keel_protocol::acp::v2::ACP_V2_PROTOCOL_VERSION)
                })
    }

    /// Answers one of the engine's requests.
    pub(crate) async fn respond_to_engine(&self, id: RequestId, result: Value) {
        if let Err(err) = self.client.respond(id, result).await {
            tracing::warn!("the engine did not take an answer: {err}");
        }
    }

    async fn handle_request(self: Arc<Self>, request: JsonRpcRequest) {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        let answer = match AcpClientRequest::from_method_and_params(&method, params) {
            Ok(AcpClientRequest::SessionPrompt(prompt)) => {
                lock(&self.prompts).insert(id.clone(), (prompt.session_id.clone(), false));
                let answer = self.dispatch(AcpClientRequest::SessionPrompt(prompt)).await;
                let withdrawn = lock(&self.prompts)
                    .remove(&id)
                    .is_some_and(|(_, withdrawn)| withdrawn);
                // A withdrawn request is answered as such (the turn itself was cancelled).
                if withdrawn {
                    Err(error(REQUEST_CANCELLED, "the request was cancelled"))
                } else {
                    answer
                }
            }
            Ok(typed) => {
                // A session the editor now has is told its commands and notices after the
                // answer that gives it the session.
                let reopened = match &typed {
                    AcpClientRequest::SessionLoad(params)
                    | AcpClientRequest::SessionResume(params) => Some(params.session_id.clone()),
                    _ => None,
                };
                let created = matches!(
                    typed,
                    AcpClientRequest::SessionNew(_) | AcpClientRequest::SessionFork(_)
                );
                let answer = self.dispatch(typed).await;
                let opened = match &answer {
                    Ok(result) if created => result["sessionId"].as_str().map(str::to_string),
                    Ok(_) => reopened,
                    Err(_) => None,
                };
                self.wire.respond(id, answer).await;
                if let Some(session_id) = opened {
                    self.after_open(&session_id).await;
                }
                return;
            }
            Err(err) if AcpClientRequest::METHODS.contains(&method.as_str()) => Err(error(
                INVALID_PARAMS,
                format!("invalid params for `{method}`: {err}"),
            )),
            Err(_) => Err(error(
                METHOD_NOT_FOUND,
                format!("unknown method `{}`", keel_protocol::echo_bounded(&method)),
            )),
        };
        self.wire.respond(id, answer).await;
    }

    async fn dispatch(&self, request: AcpClientRequest) -> Answer {
        match request {
            AcpClientRequest::Initialize(params) => to_value(&self.initialize(params)),
            AcpClientRequest::Authenticate(params) => {
                self.authenticate(&params)?;
                to_value(&EmptyObject {})
            }
            AcpClientRequest::Logout(_) => {
                self.logout().await?;
                to_value(&EmptyObject {})
            }
            AcpClientRequest::SessionNew(params) => to_value(&self.new_session(params).await?),
            AcpClientRequest::SessionPrompt(params) => to_value(&self.prompt(params).await?),
            AcpClientRequest::SessionLoad(params) => {
                to_value(&self.open_session(params, true).await?)
            }
            AcpClientRequest::SessionResume(params) => {
                to_value(&self.open_session(params, false).await?)
            }
            AcpClientRequest::SessionList(params) => to_value(&self.list_sessions(params).await?),
            AcpClientRequest::SessionClose(params) => {
                self.close_session(&params.session_id).await?;
                to_value(&EmptyObject {})
            }
            AcpClientRequest::SessionDelete(params) => {
                self.delete_session(&params.session_id).await?;
                to_value(&EmptyObject {})
            }
            AcpClientRequest::SessionSetMode(params) => {
                self.set_option(&params.session_id, "mode", &params.mode_id)
                    .await?;
                to_value(&EmptyObject {})
            }
            AcpClientRequest::SessionFork(params) => to_value(&self.fork_session(params).await?),
            AcpClientRequest::SessionSteering(params) => to_value(&self.steer(params).await?),
            AcpClientRequest::SessionSetConfigOption(params) => {
                let Some(value) = params.value.as_str() else {
                    return Err(error(
                        INVALID_PARAMS,
                        format!("config option `{}` takes a string value", params.config_id),
                    ));
                };
                let config_options = self
                    .set_option(&params.session_id, &params.config_id, value)
                    .await?;
                to_value(&SetSessionConfigOptionResponse { config_options })
            }
        }
    }

    /// What the editor offered at `initialize`.
    pub(crate) fn offered(&self) -> ClientCapabilities {
        lock(&self.capabilities).clone()
    }

    fn initialize(&self, params: InitializeRequest) -> InitializeResponse {
        *self
            .capabilities
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = params.client_capabilities;
        InitializeResponse {
            protocol_version: params.protocol_version.min(ACP_PROTOCOL_VERSION),
            agent_capabilities: AgentCapabilities {
                load_session: true,
                prompt_capabilities: PromptCapabilities {
                    image: true,
                    audio: false,
                    embedded_context: true,
                },
                mcp_capabilities: McpCapabilities {
                    http: true,
                    sse: false,
                },
                session_capabilities: SessionCapabilities {
                    list: Some(EmptyObject {}),
                    resume: Some(EmptyObject {}),
                    close: Some(EmptyObject {}),
                    delete: Some(EmptyObject {}),
                    additional_directories: Some(EmptyObject {}),
                    fork: Some(EmptyObject {}),
                },
                auth: Some(keel_protocol::acp::AgentAuthCapabilities {
                    logout: Some(EmptyObject {}),
                }),
            },
            meta: Some(serde_json::json!({"steering": {"supported": true}})),
            auth_methods: self.auth_methods(),
            agent_info: Implementation {
                name: "keel".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                title: Some("Keel".to_string()),
            },
        }
    }

    pub(crate) async fn new_session(
        &self,
        params: NewSessionRequest,
    ) -> Result<NewSessionResponse, JsonRpcErrorObject> {
        if !params.cwd.is_absolute() {
            return Err(error(
                INVALID_PARAMS,
                format!("cwd `{}` is not an absolute path", params.cwd.display()),
            ));
        }
        let setup = self.session_setup(&params.mcp_servers, &params.additional_directories)?;
        let started = self
            .client
            .request::<client_request::ThreadStart>(ThreadStartParams {
                overrides: ThreadOverrides {
                    cwd: Some(params.cwd.clone()),
                    config: (!setup.config.is_empty()).then_some(setup.config),
                    ..ThreadOverrides::default()
                },
                ephemeral: None,
                dynamic_tools: None,
                environments: None,
            })
            .await
            .map_err(engine_error)?;
        Ok(self.adopt_new(started, params.cwd, setup.notices).await)
    }

    /// A thread just started (or forked) for the editor as one of its sessions: registered
    /// with its pickers, and the answer that gives it to the editor.
    pub(crate) async fn adopt_new(
        &self,
        started: keel_protocol::app_server::ThreadStartResponse,
        cwd: std::path::PathBuf,
        notices: Vec<String>,
    ) -> NewSessionResponse {
        let session_id = started.thread.id;
        let pickers = self.pickers(started.settings).await;
        let response = NewSessionResponse {
            session_id: session_id.clone(),
            modes: Some(pickers.mode_state()),
            config_options: Some(pickers.options()),
        };
        self.sessions.add(&session_id, pickers, cwd, notices);
        response
    }

    async fn handle_notification(&self, notification: JsonRpcNotification) {
        let method = notification.method.clone();
        match AcpClientNotification::from_method_and_params(&method, notification.params) {
            Ok(AcpClientNotification::SessionCancel(cancel)) => self.cancel(cancel).await,
            Ok(AcpClientNotification::CancelRequest(withdrawn)) => {
                // Only a prompt runs long enough to be worth withdrawing: its turn stops.
                let session = lock(&self.prompts).get_mut(&withdrawn.request_id).map(
                    |(session, withdrawn)| {
                        *withdrawn = true;
                        session.clone()
                    },
                );
                if let Some(session_id) = session {
                    self.cancel(CancelNotification { session_id }).await;
                }
            }
            Err(err) => tracing::warn!(%method, "ignoring a notification: {err}"),
        }
    }

    /// Stops the session's turn: its waiting approvals are answered `cancel` at once, and the
    /// prompt ends with `cancelled` when the engine reports the turn interrupted.
    async fn cancel(&self, cancel: CancelNotification) {
        let Some((turn, approvals)) = self.sessions.with(&cancel.session_id, |session| {
            session.cancelled = true;
            (session.turn.clone(), std::mem::take(&mut session.approvals))
        }) else {
            tracing::warn!(session = %cancel.session_id, "cancel of an unknown session");
            return;
        };
        for id in approvals {
            self.respond_to_engine(
                id,
                serde_json::json!({ "decision": CommandExecutionApprovalDecision::Cancel }),
            )
            .await;
        }
        if let Some(turn_id) = turn
            && let Err(err) = self
                .client
                .request::<client_request::TurnInterrupt>(TurnInterruptParams {
                    thread_id: cancel.session_id.clone(),
                    turn_id,
                })
                .await
        {
            tracing::debug!("interrupt: {err}");
        }
    }

    /// Carries the engine's events to the editor, in order.
    async fn forward_events(self: Arc<Self>) {
        while let Some(event) = self.client.next_event().await {
            match event {
                InProcessEvent::Notification(notification) => self.forward(notification).await,
                InProcessEvent::ServerRequest { id, request } => {
                    let asker = crate::permissions::Asker {
                        subagents: self.shows_subagents(),
                        sessions: Arc::clone(&self.sessions),
                        wire: self.wire.clone(),
                        client: Arc::clone(&self.client),
                    };
                    tokio::spawn(crate::permissions::answer(asker, id, request));
                }
                InProcessEvent::Lagged { skipped } => {
                    tracing::warn!(skipped, "streamed deltas were skipped");
                }
            }
        }
    }

    /// A session's pickers, on the catalogue's models (asked once per connection).
    pub(crate) async fn pickers(&self, settings: ThreadSettings) -> crate::modes::Pickers {
        let models = self
            .models
            .get_or_init(|| async {
                match self
                    .client
                    .request::<client_request::ModelList>(ModelListParams::default())
                    .await
                {
                    Ok(list) => list.data,
                    Err(err) => {
                        tracing::warn!("no model catalogue for the model picker: {err}");
                        Vec::new()
                    }
                }
            })
            .await
            .clone();
        crate::modes::Pickers::new(settings, models)
    }

    /// Changes a picker; every picker as it is now. A mode change is announced as such too.
    pub(crate) async fn set_option(
        &self,
        session_id: &str,
        config_id: &str,
        value: &str,
    ) -> Result<Vec<keel_protocol::acp::SessionConfigOption>, JsonRpcErrorObject> {
        let (update, options, mode) = self
            .sessions
            .with(session_id, |session| {
                let pickers = session.pickers.as_mut()?;
                let update = pickers.set(session_id, config_id, value);
                Some((update, pickers.options(), pickers.mode.clone()))
            })
            .flatten()
            .ok_or_else(|| unknown_session(session_id))?;
        self.client
            .request::<client_request::ThreadSettingsUpdate>(update?)
            .await
            .map_err(engine_error)?;
        if config_id == "mode" {
            self.send_update(
                session_id,
                SessionUpdate::CurrentModeUpdate {
                    current_mode_id: mode,
                },
            )
            .await;
        }
        self.send_update(
            session_id,
            SessionUpdate::ConfigOptionUpdate {
                config_options: options.clone(),
            },
        )
        .await;
        Ok(options)
    }

    /// Sends one `session/update`.
    pub(crate) async fn send_update(&self, session_id: &str, update: SessionUpdate) {
        self.wire.session_update(session_id, update).await;
    }

    async fn forward(&self, notification: ServerNotification) {
        if let ServerNotification::ThreadStarted(started) = &notification {
            self.adopt_subagent(&started.thread).await;
        }
        for (session_id, update) in crate::updates::updates(&notification, &self.sessions) {
            let shown = match &update {
                SessionUpdate::Notice(_) => self.shows_notices(),
                _ => true,
            };
            if shown
                && self.shows_updates_of(&session_id)
                && let Some(update) = self.sessions.hold_while_opening(&session_id, update)
            {
                self.send_tool_update(&session_id, update).await;
            }
        }
        match notification {
            ServerNotification::TurnStarted(started) => {
                self.sessions.with(&started.thread_id, |session| {
                    session.turn = Some(started.turn.id.clone());
                });
            }
            ServerNotification::TurnCompleted(completed) => {
                let turn = completed.turn;
                let waiting = self.sessions.with(&completed.thread_id, |session| {
                    session.turn = None;
                    session.streamed.clear();
                    session.changes.clear();
                    let cancelled = std::mem::take(&mut session.cancelled);
                    session.prompt.take().map(|prompt| (prompt, cancelled))
                });
                if let Some(Some((prompt, cancelled))) = waiting {
                    let end = match turn.status {
                        _ if cancelled => Ok(StopReason::Cancelled),
                        TurnStatus::Interrupted => Ok(StopReason::Cancelled),
                        TurnStatus::Failed => Err(error(
                            INTERNAL_ERROR,
                            turn.error
                                .map(|failure| failure.message)
                                .unwrap_or_else(|| "the turn failed".to_string()),
                        )),
                        TurnStatus::Completed | TurnStatus::InProgress => Ok(StopReason::EndTurn),
                    };
                    let _ignored = prompt.send(end);
                }
            }
            _ => {}
        }
    }
}

impl Agent {
    /// Sends an update; a command's tool call shows the editor's terminal running it, whether
    /// the terminal was made before the call was announced or after.
    pub(crate) async fn send_tool_update(&self, session_id: &str, mut update: SessionUpdate) {
        let announced = match &mut update {
            SessionUpdate::ToolCall(call) => Some(call.tool_call_id.clone()),
            SessionUpdate::ToolCallUpdate(ended) if ended.status.is_some() => {
                // The finished call keeps showing its terminal instead of a copy of the output.
                let terminal = self.sessions.with(session_id, |session| {
                    session.announced.remove(&ended.tool_call_id);
                    session.terminals.remove(&ended.tool_call_id)
                });
                if let Some(Some(terminal_id)) = terminal {
                    ended.content = Some(vec![ToolCallContent::Terminal { terminal_id }]);
                }
                None
            }
            _ => None,
        };
        self.send_update(session_id, update).await;
        if let Some(call_id) = announced {
            let waiting = self.sessions.with(session_id, |session| {
                session.announced.insert(call_id.clone());
                session.terminals.get(&call_id).cloned()
            });
            if let Some(Some(terminal_id)) = waiting {
                self.send_update(
                    session_id,
                    crate::editor::terminal_update(&call_id, &terminal_id),
                )
                .await;
            }
        }
    }
}

/// The id of a line that is JSON with a usable id, to answer it by.
fn readable_id(line: &str) -> Option<RequestId> {
    let value: Value = serde_json::from_str(line).ok()?;
    serde_json::from_value(value.get("id")?.clone()).ok()
}

fn to_value<T: serde::Serialize>(value: &T) -> Answer {
    serde_json::to_value(value).map_err(|err| error(INTERNAL_ERROR, err.to_string()))
}

pub(crate) fn unknown_session(id: &str) -> JsonRpcErrorObject {
    error(
        INVALID_PARAMS,
        format!("unknown session `{}`", keel_protocol::echo_bounded(id)),
    )
}

pub(crate) fn engine_error(err: keel_app_server::InProcessError) -> JsonRpcErrorObject {
    match err {
        keel_app_server::InProcessError::Rpc(error) => error,
        other => error(INTERNAL_ERROR, other.to_string()),
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
