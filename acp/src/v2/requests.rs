//! The editor's v2 requests, carried out by the agent's v1 handlers: `initialize` states v2's
//! capabilities, `auth/login` is `authenticate`, a prompt is answered with its message id at
//! once and ends with an idle `state_update`, and `session/resume` replays on request and
//! sends the session's state before answering.

use std::sync::Arc;

use keel_protocol::acp::v2::{
    self, AcpV2ClientRequest, ConfigValue, InitializeRequest, InitializeResponse,
    NewSessionResponse, PromptResponse, ResumeSessionResponse, SetSessionConfigOptionResponse,
    StateUpdate,
};
use keel_protocol::acp::{
    AuthenticateRequest, ClientCapabilities, EmptyObject, Implementation, LoadSessionRequest,
    NewSessionRequest, PromptRequest,
};
use keel_protocol::{
    INTERNAL_ERROR, INVALID_PARAMS, JsonRpcErrorObject, JsonRpcRequest, METHOD_NOT_FOUND,
    MethodTable, RequestId,
};
use serde_json::Value;

use super::convert::{commands, config_option};
use crate::agent::{Agent, unknown_session};

type Answer = Result<Value, JsonRpcErrorObject>;

impl Agent {
    /// Carries out one v2 request and answers it.
    pub(crate) async fn handle_request_v2(self: Arc<Self>, request: JsonRpcRequest) {
        let JsonRpcRequest {
            id, method, params, ..
        } = request;
        let typed = match AcpV2ClientRequest::from_method_and_params(&method, params) {
            Ok(typed) => typed,
            Err(err) => {
                let error = if AcpV2ClientRequest::METHODS.contains(&method.as_str()) {
                    JsonRpcErrorObject::new(
                        INVALID_PARAMS,
                        format!("invalid params for `{method}`: {err}"),
                    )
                } else {
                    JsonRpcErrorObject::new(
                        METHOD_NOT_FOUND,
                        format!(
                            "unknown method `{}` (ACP v2 draft)",
                            keel_protocol::echo_bounded(&method)
                        ),
                    )
                };
                self.wire.respond(id, Err(error)).await;
                return;
            }
        };
        let opened = match &typed {
            AcpV2ClientRequest::SessionResume(params) => Some(params.session_id.clone()),
            _ => None,
        };
        let answer = match typed {
            AcpV2ClientRequest::SessionPrompt(prompt) => {
                self.prompt_v2(id, prompt).await;
                return;
            }
            AcpV2ClientRequest::Initialize(params) => to_value(&self.initialize_v2(params)),
            AcpV2ClientRequest::Login(params) => self
                .authenticate(&AuthenticateRequest {
                    method_id: params.method_id,
                })
                .and_then(|()| to_value(&EmptyObject {})),
            AcpV2ClientRequest::Logout(_) => match self.logout().await {
                Ok(()) => to_value(&EmptyObject {}),
                Err(err) => Err(err),
            },
            AcpV2ClientRequest::SessionNew(params) => {
                let created = self
                    .new_session(NewSessionRequest {
                        cwd: params.cwd,
                        mcp_servers: params.mcp_servers,
                        additional_directories: params.additional_directories,
                    })
                    .await;
                match created {
                    Ok(created) => {
                        let session_id = created.session_id.clone();
                        let response = NewSessionResponse {
                            session_id: session_id.clone(),
                            config_options: created
                                .config_options
                                .unwrap_or_default()
                                .into_iter()
                                .map(config_option)
                                .collect(),
                            available_commands: commands(self.commands_of(&session_id).await),
                        };
                        let answer = to_value(&response);
                        self.wire.respond(id, answer).await;
                        self.after_open(&session_id).await;
                        return;
                    }
                    Err(err) => Err(err),
                }
            }
            AcpV2ClientRequest::SessionResume(params) => {
                let replay = params.replay_from.is_some();
                let session_id = params.session_id.clone();
                let opened = self
                    .open_session(
                        LoadSessionRequest {
                            session_id: params.session_id,
                            cwd: params.cwd,
                            mcp_servers: params.mcp_servers,
                            additional_directories: params.additional_directories,
                        },
                        replay,
                    )
                    .await;
                match opened {
                    Ok(loaded) => {
                        // The session's state, after the replay and before the answer.
                        self.send_state(&session_id).await;
                        to_value(&ResumeSessionResponse {
                            config_options: loaded
                                .config_options
                                .unwrap_or_default()
                                .into_iter()
                                .map(config_option)
                                .collect(),
                            available_commands: commands(self.commands_of(&session_id).await),
                        })
                    }
                    Err(err) => Err(err),
                }
            }
            AcpV2ClientRequest::SessionList(params) => match self.list_sessions(params).await {
                Ok(list) => to_value(&list),
                Err(err) => Err(err),
            },
            AcpV2ClientRequest::SessionClose(params) => {
                match self.close_session(&params.session_id).await {
                    Ok(()) => to_value(&EmptyObject {}),
                    Err(err) => Err(err),
                }
            }
            AcpV2ClientRequest::SessionDelete(params) => {
                match self.delete_session(&params.session_id).await {
                    Ok(()) => to_value(&EmptyObject {}),
                    Err(err) => Err(err),
                }
            }
            AcpV2ClientRequest::SessionSetConfigOption(params) => match params.value {
                ConfigValue::Id(value) => {
                    match self
                        .set_option(&params.session_id, &params.config_id, &value)
                        .await
                    {
                        Ok(options) => to_value(&SetSessionConfigOptionResponse {
                            config_options: options.into_iter().map(config_option).collect(),
                        }),
                        Err(err) => Err(err),
                    }
                }
                ConfigValue::Boolean(_) => Err(JsonRpcErrorObject::new(
                    INVALID_PARAMS,
                    format!(
                        "config option `{}` is a select: it takes an `id` value",
                        keel_protocol::echo_bounded(&params.config_id)
                    ),
                )),
            },
        };
        let failed = answer.is_err();
        self.wire.respond(id, answer).await;
        if let Some(session_id) = opened.filter(|_| !failed) {
            self.after_open(&session_id).await;
        }
    }

    /// `initialize` in v2: v2's editors offer nothing Keel uses (no files, terminals or
    /// notices in the draft's stable set), so Keel's own are used for everything.
    fn initialize_v2(&self, params: InitializeRequest) -> InitializeResponse {
        *self
            .capabilities
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = ClientCapabilities::default();
        InitializeResponse {
            protocol_version: params.protocol_version.min(v2::ACP_V2_PROTOCOL_VERSION),
            info: Implementation {
                name: "keel".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                title: Some("Keel".to_string()),
            },
            capabilities: v2::AgentCapabilities {
                session: v2::SessionCapabilities {
                    prompt: v2::PromptCapabilities {
                        image: Some(EmptyObject {}),
                        embedded_context: Some(EmptyObject {}),
                    },
                    mcp: v2::McpCapabilities {
                        stdio: Some(EmptyObject {}),
                        http: Some(EmptyObject {}),
                    },
                    delete: Some(EmptyObject {}),
                    additional_directories: Some(EmptyObject {}),
                },
            },
            auth_methods: self
                .auth_methods()
                .into_iter()
                .map(|method| v2::AuthMethod::Agent {
                    method_id: method.id,
                    name: method.name,
                })
                .collect(),
        }
    }

    /// A v2 prompt: answered with its message id once accepted, then the session is
    /// `running` until the turn ends, told by an idle `state_update` with the stop reason (or
    /// `error` and what went wrong).
    async fn prompt_v2(&self, id: RequestId, prompt: PromptRequest) {
        let session_id = prompt.session_id.clone();
        if self.sessions.with(&session_id, |_| ()).is_none() {
            self.wire
                .respond(id, Err(unknown_session(&session_id)))
                .await;
            return;
        }
        let converter = self.wire.speak_v2();
        let message_id = converter.new_message_id();
        self.wire
            .session_update_v2(
                &session_id,
                converter.state(&session_id, StateUpdate::Running {}),
            )
            .await;
        self.wire
            .respond(id, to_value(&PromptResponse { message_id }))
            .await;
        let idle = match self.prompt(prompt).await {
            Ok(ended) => StateUpdate::Idle {
                stop_reason: serde_json::to_value(ended.stop_reason)
                    .ok()
                    .and_then(|reason| reason.as_str().map(str::to_string)),
                error: None,
            },
            Err(error) => StateUpdate::Idle {
                stop_reason: Some("error".to_string()),
                error: Some(error),
            },
        };
        self.wire
            .session_update_v2(&session_id, converter.state(&session_id, idle))
            .await;
    }

    /// The session's state as it is now (a resumed session's snapshot).
    async fn send_state(&self, session_id: &str) {
        let running = self
            .sessions
            .with(session_id, |session| session.turn.is_some())
            .unwrap_or(false);
        let state = if running {
            StateUpdate::Running {}
        } else {
            StateUpdate::Idle {
                stop_reason: None,
                error: None,
            }
        };
        let converter = self.wire.speak_v2();
        self.wire
            .session_update_v2(session_id, converter.state(session_id, state))
            .await;
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Answer {
    serde_json::to_value(value)
        .map_err(|err| JsonRpcErrorObject::new(INTERNAL_ERROR, err.to_string()))
}
