//! Prompts: a turn per `session/prompt` (or the command it types), answered when the turn
//! ends; and input for a running turn (`_session/steering`).

use keel_protocol::acp::{
    ContentBlock, ContentChunk, EmbeddedResourceContents, PromptRequest, PromptResponse,
    SessionUpdate, SteeringRequest, SteeringResponse, StopReason,
};
use keel_protocol::app_server::{
    ReviewDelivery, ReviewStartParams, ThreadGoalSetParams, ThreadIdParams, TurnStartParams,
    TurnSteerParams, UserInput, client_request,
};
use keel_protocol::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JsonRpcErrorObject, ThreadGoalMutationOrigin,
    ThreadGoalStatus,
};
use tokio::sync::oneshot;

use crate::agent::{Agent, engine_error, unknown_session};
use crate::commands::Command;
use crate::sessions::PromptEnd;

fn error(code: i64, message: impl Into<String>) -> JsonRpcErrorObject {
    JsonRpcErrorObject::new(code, message)
}

impl Agent {
    /// `session/prompt`: runs the turn (or the command typed) and answers when it ends.
    pub(crate) async fn prompt(
        &self,
        params: PromptRequest,
    ) -> Result<PromptResponse, JsonRpcErrorObject> {
        let command = self.command_of(&params.session_id, &params.prompt).await?;
        if let Some(command) = &command
            && let Some(said) = self.run_at_once(&params.session_id, command).await?
        {
            self.send_update(
                &params.session_id,
                SessionUpdate::AgentMessageChunk(ContentChunk {
                    content: ContentBlock::text(said),
                }),
            )
            .await;
            return Ok(PromptResponse {
                stop_reason: StopReason::EndTurn,
            });
        }
        let input = match &command {
            Some(Command::Prompt(prompt)) => inputs(prompt.clone())?,
            Some(Command::Compact | Command::Review(_) | Command::Goal(_) | Command::Revert) => {
                Vec::new()
            }
            None => inputs(params.prompt)?,
        };
        let (tx, rx) = oneshot::channel::<PromptEnd>();
        let busy = self
            .sessions
            .with(&params.session_id, |session| {
                if session.prompt.is_some() {
                    return true;
                }
                session.prompt = Some(tx);
                session.cancelled = false;
                false
            })
            .ok_or_else(|| unknown_session(&params.session_id))?;
        if busy {
            return Err(error(
                INVALID_REQUEST,
                "a prompt is already running in this session; cancel it first",
            ));
        }
        let thread_id = params.session_id.clone();
        let started = match command {
            Some(Command::Compact) => self
                .client
                .request::<client_request::ThreadCompactStart>(ThreadIdParams { thread_id })
                .await
                .map(|_| None),
            Some(Command::Review(target)) => self
                .client
                .request::<client_request::ReviewStart>(ReviewStartParams {
                    thread_id,
                    target,
                    delivery: Some(ReviewDelivery::Inline),
                })
                .await
                .map(|review| Some(review.turn.id)),
            Some(Command::Goal(objective)) => self.pursue_goal(&params.session_id, objective).await,
            Some(Command::Prompt(_) | Command::Revert) | None => {
                self.start_turn(thread_id, input).await.map(Some)
            }
        };
        match started {
            Ok(turn) => {
                self.sessions.with(&params.session_id, |session| {
                    if let Some(turn) = turn {
                        session.turn.get_or_insert(turn);
                    }
                });
            }
            Err(err) => {
                self.sessions
                    .with(&params.session_id, |session| session.prompt = None);
                return Err(engine_error(err));
            }
        }
        match rx.await {
            Ok(end) => end.map(|stop_reason| PromptResponse { stop_reason }),
            Err(_) => Err(error(INTERNAL_ERROR, "the engine stopped during the turn")),
        }
    }

    /// Sets the thread's goal; the engine starts a turn toward it at once (and more while it
    /// stays active). A goal that is not active starts none: the prompt ends here.
    async fn pursue_goal(
        &self,
        session_id: &str,
        objective: String,
    ) -> Result<Option<String>, keel_app_server::InProcessError> {
        let set = self
            .client
            .request::<client_request::ThreadGoalSet>(ThreadGoalSetParams {
                thread_id: session_id.to_string(),
                objective: Some(objective),
                status: None,
                token_budget: None,
                origin: Some(ThreadGoalMutationOrigin::User),
            })
            .await?;
        if set.goal.status != ThreadGoalStatus::Active {
            let waiting = self
                .sessions
                .with(session_id, |session| session.prompt.take())
                .flatten();
            if let Some(prompt) = waiting {
                let _ignored = prompt.send(Ok(StopReason::EndTurn));
            }
        }
        Ok(None)
    }

    /// A turn on the thread with `input`; its id.
    async fn start_turn(
        &self,
        thread_id: String,
        input: Vec<UserInput>,
    ) -> Result<String, keel_app_server::InProcessError> {
        self.client
            .request::<client_request::TurnStart>(TurnStartParams {
                thread_id,
                input,
                cwd: None,
                approval_policy: None,
                sandbox_policy: None,
                permissions: None,
                model: None,
                effort: None,
                output_schema: None,
                collaboration_mode: None,
                environments: None,
            })
            .await
            .map(|started| started.turn.id)
    }

    /// `_session/steering`: the running turn takes the input before its next model request
    /// (`injected`). With no turn running, a turn is started for it (`startedNewTurn`; its
    /// end answers no prompt), or, when the editor asked so, nothing is done
    /// (`promptRequired`: send it as a prompt).
    pub(crate) async fn steer(
        &self,
        params: SteeringRequest,
    ) -> Result<SteeringResponse, JsonRpcErrorObject> {
        if params.prompt.is_empty() {
            return Err(error(INVALID_PARAMS, "steering needs a non-empty prompt"));
        }
        let input = inputs(params.prompt)?;
        let running = self
            .sessions
            .with(&params.session_id, |session| session.turn.clone())
            .ok_or_else(|| unknown_session(&params.session_id))?;
        if let Some(turn_id) = running {
            match self
                .client
                .request::<client_request::TurnSteer>(TurnSteerParams {
                    thread_id: params.session_id.clone(),
                    expected_turn_id: turn_id,
                    input: input.clone(),
                })
                .await
            {
                Ok(_) => return Ok(outcome("injected", None)),
                // The turn ended meanwhile: the input is for a new turn, as below.
                Err(err) => tracing::debug!("steering found no running turn: {err}"),
            }
        }
        let wants_prompt = params
            .meta
            .as_ref()
            .and_then(|meta| meta["steering"]["idleBehavior"].as_str())
            == Some("promptRequired");
        if wants_prompt {
            return Ok(outcome("promptRequired", Some("noRunningTurn")));
        }
        let turn = self
            .start_turn(params.session_id.clone(), input)
            .await
            .map_err(engine_error)?;
        self.sessions.with(&params.session_id, |session| {
            session.turn.get_or_insert(turn);
        });
        Ok(outcome("startedNewTurn", None))
    }
}

fn outcome(outcome: &str, reason: Option<&str>) -> SteeringResponse {
    SteeringResponse {
        outcome: outcome.to_string(),
        reason: reason.map(str::to_string),
    }
}

/// A prompt's blocks as the engine's input.
fn inputs(prompt: Vec<ContentBlock>) -> Result<Vec<UserInput>, JsonRpcErrorObject> {
    prompt.into_iter().map(user_input).collect()
}

/// A prompt block as the engine's input: text as text, images as data URLs, resources as
/// text the model can read (a link names the file for the model to open).
fn user_input(block: ContentBlock) -> Result<UserInput, JsonRpcErrorObject> {
    let text = |text: String| UserInput::Text {
        text,
        text_elements: Vec::new(),
    };
    Ok(match block {
        ContentBlock::Text { text: body } => text(body),
        ContentBlock::Image {
            data, mime_type, ..
        } => UserInput::Image {
            url: format!("data:{mime_type};base64,{data}"),
        },
        ContentBlock::Audio { .. } => {
            return Err(error(INVALID_PARAMS, "audio prompts are not supported"));
        }
        ContentBlock::ResourceLink { uri, name, .. } => text(format!(
            "[@{name}]({})",
            uri.strip_prefix("file://").unwrap_or(&uri)
        )),
        ContentBlock::Resource { resource } => match resource {
            EmbeddedResourceContents::Text {
                uri, text: body, ..
            } => text(format!(
                "<context ref=\"{}\">\n{body}\n</context>",
                uri.strip_prefix("file://").unwrap_or(&uri)
            )),
            EmbeddedResourceContents::Blob { uri, .. } => {
                return Err(error(
                    INVALID_PARAMS,
                    format!(
                        "binary resource `{}` is not supported",
                        keel_protocol::echo_bounded(&uri)
                    ),
                ));
            }
        },
    })
}
