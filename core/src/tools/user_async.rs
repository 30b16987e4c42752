//! The model talks to the user without stopping its work (Codex 0.171 offers these to the
//! top-level agent of the models whose catalogue entry lists them, in code mode):
//! `send_message_to_user_async` shows a message at once, as an agent message;
//! `request_user_input_async` shows its questions the same way (each title, then its options
//! as `- option` lines). Both answer `{"accepted":true}` and the turn goes on; the user's
//! reply is their next message.

use futures::future::BoxFuture;
use keel_protocol::{AsyncAgentMessageEvent, AsyncUserInputQuestion, EventMsg};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{DynTool, ToolApproval, ToolContext, ToolError, ToolInput};

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

/// What both tools answer: the user was shown it; the turn goes on.
const ACCEPTED: &str = r#"{"accepted":true}"#;

/// Shows `text` to the user at once, as a message of the running turn that does not hold it
/// (`questions` for `request_user_input_async`).
async fn show(ctx: &ToolContext, text: String, questions: Option<Vec<AsyncUserInputQuestion>>) {
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::AsyncAgentMessage(AsyncAgentMessageEvent {
                call_id: ctx.call_id().to_string(),
                message: text,
                questions,
            }),
        )
        .await;
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
                ToolError::Respond(format!("failed to parse function arguments: {err}"))
            })?;
            if args.message.trim().is_empty() {
                return Err(ToolError::Respond("message must not be empty".to_string()));
            }
            show(&ctx, args.message, None).await;
            Ok(ACCEPTED.to_string())
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
             and the reply arrives later as a user message. Ask only for what you cannot \
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
                ToolError::Respond(format!("failed to parse function arguments: {err}"))
            })?;
            if args.questions.is_empty() {
                return Err(ToolError::Respond(
                    "questions must not be empty".to_string(),
                ));
            }
            let mut shown = Vec::new();
            let mut asked = Vec::new();
            for question in args.questions {
                asked.push(AsyncUserInputQuestion {
                    title: question.title.clone(),
                    options: question.options.clone(),
                });
                let mut text = question.title;
                if let Some(options) = question.options {
                    if !options.iter().any(|option| !option.trim().is_empty()) {
                        return Err(ToolError::Respond(
                            "options must contain at least one non-empty answer".to_string(),
                        ));
                    }
                    for option in options {
                        text.push_str(&format!("\n- {option}"));
                    }
                }
                shown.push(text);
            }
            show(&ctx, shown.join("\n\n"), Some(asked)).await;
            Ok(ACCEPTED.to_string())
        })
    }
}
