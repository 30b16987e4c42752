//! The model talks to the user without stopping its work (Codex 0.171 offers these to the
//! models whose catalogue entry lists them, in code mode): `send_message_to_user_async` shows
//! a message at once, as an agent message; `request_user_input_async` asks questions the way
//! `request_user_input` does, returns at once, and the answers join the conversation as a user
//! message whenever they come (with the running turn's next request, or before the next turn).

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use keel_protocol::{
    AgentMessageEvent, EventMsg, RequestUserInputEvent, UserInputOption, UserInputQuestion,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};
use crate::models::ResponseItem;

/// `send_message_to_user_async`.
pub(crate) struct SendMessageToUserAsync;

/// `request_user_input_async`.
pub(crate) struct RequestUserInputAsync;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageArgs {
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionsArgs {
    questions: Vec<AsyncQuestion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AsyncQuestion {
    title: String,
    #[serde(default)]
    options: Option<Vec<String>>,
}

fn function(name: &str, description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "name": name,
        "description": description,
        "strict": false,
        "parameters": parameters,
    })
}

impl DynTool for SendMessageToUserAsync {
    fn name(&self) -> &str {
        "send_message_to_user_async"
    }

    fn spec(&self) -> Value {
        function(
            self.name(),
            "Show the user a short message now, without ending your turn or waiting for a \
             reply: a blocker, a finding that changes the task, or an answer to a question \
             they asked while you work. A reply, if any, arrives later as a user message.",
            json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "The message."}},
                "required": ["message"],
                "additionalProperties": false
            }),
        )
    }

    fn approval(&self) -> ToolApproval {
        ToolApproval::Never
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let args: MessageArgs = serde_json::from_str(input.text()).map_err(|err| {
                ToolError::Respond(format!(
                    "invalid arguments for `send_message_to_user_async`: {err}"
                ))
            })?;
            if args.message.trim().is_empty() {
                return Err(ToolError::Respond("`message` is empty".to_string()));
            }
            ctx.host
                .send_event(
                    &ctx.ids.sub_id,
                    EventMsg::AgentMessage(AgentMessageEvent {
                        message: args.message,
                    }),
                )
                .await;
            Ok("The message was shown to the user.".to_string())
        })
    }
}

impl DynTool for RequestUserInputAsync {
    fn name(&self) -> &str {
        "request_user_input_async"
    }

    fn spec(&self) -> Value {
        function(
            self.name(),
            "Ask the user one or more questions while you keep working: this returns at once, \
             and the answers arrive later as a user message. Ask only for what you cannot \
             find out yourself. The user can always answer in free text.",
            json!({
                "type": "object",
                "properties": {
                    "questions": {
                        "type": "array",
                        "description": "The questions, in the order shown.",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "title": {"type": "string", "description": "The whole question."},
                                "options": {
                                    "type": "array",
                                    "description": "Suggested answers, the recommended one first.",
                                    "minItems": 1,
                                    "items": {"type": "string"}
                                }
                            },
                            "required": ["title"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["questions"],
                "additionalProperties": false
            }),
        )
    }

    fn approval(&self) -> ToolApproval {
        ToolApproval::Never
    }

    fn handle(
        &self,
        ctx: ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        Box::pin(async move {
            let args: QuestionsArgs = serde_json::from_str(input.text()).map_err(|err| {
                ToolError::Respond(format!(
                    "invalid arguments for `request_user_input_async`: {err}"
                ))
            })?;
            if args.questions.is_empty() {
                return Err(ToolError::Respond(
                    "`questions` is empty: ask at least one question".to_string(),
                ));
            }
            let titles: BTreeMap<String, String> = args
                .questions
                .iter()
                .enumerate()
                .map(|(i, q)| (format!("q{}", i + 1), q.title.clone()))
                .collect();
            let questions: Vec<UserInputQuestion> = args
                .questions
                .into_iter()
                .enumerate()
                .map(|(i, q)| UserInputQuestion {
                    id: format!("q{}", i + 1),
                    header: String::new(),
                    question: q.title,
                    options: q.options.map(|options| {
                        options
                            .into_iter()
                            .map(|label| UserInputOption {
                                label,
                                description: String::new(),
                            })
                            .collect()
                    }),
                    is_other: true,
                    is_secret: false,
                })
                .collect();
            let call_id = ctx.call_id().clone();
            let answers = ctx.host.register_user_input(call_id.clone());
            ctx.host
                .send_event(
                    &ctx.ids.sub_id,
                    EventMsg::RequestUserInput(RequestUserInputEvent {
                        call_id,
                        turn_id: ctx.ids.turn_id.clone(),
                        questions,
                    }),
                )
                .await;
            let host = ctx.host.clone();
            tokio::spawn(async move {
                // A client that never answers (or a conversation that ends) drops the
                // sender: nothing joins the history.
                let Ok(response) = answers.await else {
                    return;
                };
                let mut text = String::from("<user_answers>\n");
                for (id, title) in &titles {
                    let answer = response
                        .answers
                        .get(id)
                        .map(|answer| answer.answers.join(", "))
                        .unwrap_or_default();
                    text.push_str(&format!("Q: {title}\nA: {answer}\n"));
                }
                text.push_str("</user_answers>");
                host.queue_input(ResponseItem::user_text(text));
            });
            Ok(
                "The questions were shown to the user; the answers will arrive as a user \
                message."
                    .to_string(),
            )
        })
    }
}
