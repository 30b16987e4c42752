//! Recorded sessions: listed from the thread index, opened with or without a replay of the
//! conversation, forked, closed, deleted. A replay sends what was shown live: the person's messages,
//! the answers, the reasoning, each tool call once, as it ended, and each turn's plan and
//! token usage as the turn left them.

use keel_protocol::acp::{
    ContentBlock, ContentChunk, ForkSessionRequest, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionResponse, SessionInfo, SessionUpdate,
};
use keel_protocol::app_server::{
    Thread, ThreadForkParams, ThreadIdParams, ThreadItem, ThreadListCwdFilter, ThreadListParams,
    ThreadOverrides, ThreadResumeParams, UserInput, client_request,
};
use keel_protocol::{INVALID_PARAMS, JsonRpcErrorObject};

use crate::agent::{Agent, engine_error};

impl Agent {
    /// `session/list`: recorded sessions, newest first, a page at a time.
    pub(crate) async fn list_sessions(
        &self,
        params: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, JsonRpcErrorObject> {
        let page = self
            .client
            .request::<client_request::ThreadList>(ThreadListParams {
                cwd: params.cwd.map(ThreadListCwdFilter::One),
                cursor: params.cursor,
                ..ThreadListParams::default()
            })
            .await
            .map_err(engine_error)?;
        Ok(ListSessionsResponse {
            sessions: page.data.iter().map(session_info).collect(),
            next_cursor: page.next_cursor,
        })
    }

    /// `session/load` (with `replay`) and `session/resume`: the recorded thread is loaded
    /// and becomes this connection's session; a replay's updates all precede the answer, and
    /// live updates arriving during it follow it.
    pub(crate) async fn open_session(
        &self,
        params: LoadSessionRequest,
        replay: bool,
    ) -> Result<LoadSessionResponse, JsonRpcErrorObject> {
        if !params.cwd.is_absolute() {
            return Err(JsonRpcErrorObject::new(
                INVALID_PARAMS,
                format!("cwd `{}` is not an absolute path", params.cwd.display()),
            ));
        }
        let setup = self.session_setup(&params.mcp_servers, &params.additional_directories)?;
        let new_here = self.sessions.hold(&params.session_id, params.cwd.clone());
        let resumed = self
            .client
            .request::<client_request::ThreadResume>(ThreadResumeParams {
                thread_id: params.session_id.clone(),
                overrides: ThreadOverrides {
                    cwd: Some(params.cwd.clone()),
                    config: (!setup.config.is_empty()).then_some(setup.config),
                    ..ThreadOverrides::default()
                },
            })
            .await;
        let resumed = match resumed {
            Ok(resumed) => resumed,
            Err(err) => {
                if new_here {
                    self.sessions.remove(&params.session_id);
                } else {
                    self.send_held(&params.session_id).await;
                }
                return Err(engine_error(err));
            }
        };
        let pickers = self.pickers(resumed.settings).await;
        let response = LoadSessionResponse {
            modes: Some(pickers.mode_state()),
            config_options: Some(pickers.options()),
        };
        self.sessions
            .add(&params.session_id, pickers, params.cwd, setup.notices);
        if replay {
            for update in replayed(&resumed.thread) {
                self.send_update(&params.session_id, update).await;
            }
        }
        self.send_held(&params.session_id).await;
        Ok(response)
    }

    /// Sends what the engine told about session `id` while it was being opened (the usage
    /// told again on resume, a queued turn's start), in order.
    async fn send_held(&self, id: &str) {
        loop {
            let held = self.sessions.release_held(id);
            if held.is_empty() {
                break;
            }
            for update in held {
                self.send_tool_update(id, update).await;
            }
        }
    }

    /// `session/fork`: a new session holding a copy of another's conversation (recorded or
    /// open here); the original is left as it is.
    pub(crate) async fn fork_session(
        &self,
        params: ForkSessionRequest,
    ) -> Result<NewSessionResponse, JsonRpcErrorObject> {
        if !params.cwd.is_absolute() {
            return Err(JsonRpcErrorObject::new(
                INVALID_PARAMS,
                format!("cwd `{}` is not an absolute path", params.cwd.display()),
            ));
        }
        let setup = self.session_setup(&params.mcp_servers, &params.additional_directories)?;
        let forked = self
            .client
            .request::<client_request::ThreadFork>(ThreadForkParams {
                thread_id: params.session_id.clone(),
                overrides: ThreadOverrides {
                    cwd: Some(params.cwd.clone()),
                    config: (!setup.config.is_empty()).then_some(setup.config),
                    ..ThreadOverrides::default()
                },
                ephemeral: false,
                exclude_turns: true,
            })
            .await
            .map_err(engine_error)?;
        Ok(self.adopt_new(forked, params.cwd, setup.notices).await)
    }

    /// `session/close`: the thread stops running here (it stays recorded).
    pub(crate) async fn close_session(&self, id: &str) -> Result<(), JsonRpcErrorObject> {
        if !self.sessions.remove(id) {
            return Err(crate::agent::unknown_session(id));
        }
        self.client
            .request::<client_request::ThreadUnsubscribe>(ThreadIdParams {
                thread_id: id.to_string(),
            })
            .await
            .map_err(engine_error)?;
        Ok(())
    }

    /// `session/delete`: the recorded thread is removed for good.
    pub(crate) async fn delete_session(&self, id: &str) -> Result<(), JsonRpcErrorObject> {
        self.sessions.remove(id);
        self.client
            .request::<client_request::ThreadDelete>(ThreadIdParams {
                thread_id: id.to_string(),
            })
            .await
            .map_err(engine_error)?;
        Ok(())
    }
}

fn session_info(thread: &Thread) -> SessionInfo {
    let title = thread
        .name
        .clone()
        .or_else(|| Some(thread.preview.trim().to_string()).filter(|text| !text.is_empty()));
    SessionInfo {
        session_id: thread.id.clone(),
        cwd: thread.cwd.clone(),
        title,
        updated_at: rfc3339(thread.updated_at),
    }
}

/// Unix seconds as RFC 3339 (UTC).
fn rfc3339(seconds: i64) -> Option<String> {
    chrono::DateTime::from_timestamp(seconds, 0)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// The updates that show a recorded thread's conversation.
fn replayed(thread: &Thread) -> Vec<SessionUpdate> {
    let chunk = |text: &str| ContentChunk {
        content: ContentBlock::text(text),
    };
    let mut updates = Vec::new();
    for turn in &thread.turns {
        for item in &turn.items {
            match item {
                ThreadItem::UserMessage { content, .. } => {
                    for input in content {
                        if let UserInput::Text { text, .. } = input {
                            updates.push(SessionUpdate::UserMessageChunk(chunk(text)));
                        }
                    }
                }
                ThreadItem::AgentMessage { text, .. } if !text.is_empty() => {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(text)));
                }
                ThreadItem::Reasoning { summary, .. } => {
                    for part in summary {
                        updates.push(SessionUpdate::AgentThoughtChunk(chunk(part)));
                    }
                }
                other => {
                    updates.extend(crate::updates::ended_call(other).map(SessionUpdate::ToolCall));
                }
            }
        }
        // Live, the plan and the usage were last shown as the turn left them.
        if let Some(plan) = &turn.plan {
            updates.push(crate::updates::plan_update(&plan.plan));
        }
        updates.extend(
            turn.token_usage
                .as_ref()
                .and_then(crate::updates::usage_update),
        );
    }
    updates
}
