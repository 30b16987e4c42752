//! The `request_user_input` tool: the turn waits for the user's answers to the model's
//! questions (the app-server asks its clients; a client that cannot ask answers empty).

use keel_protocol::{EventMsg, RequestUserInputEvent, UserInputQuestion};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::ToolContext;
use super::builtin::BuiltinTool;
use crate::turn_context::TurnStop;

// The model's arguments (its schema is written out in the tool, in Codex's shape).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestUserInputArgs {
    questions: Vec<UserInputQuestion>,
}

/// `request_user_input`: asks the user questions and waits for the answers.
pub(crate) struct RequestUserInputTool;

impl BuiltinTool for RequestUserInputTool {
    type Args = RequestUserInputArgs;
    const NAME: &'static str = "request_user_input";

    fn description(&self) -> &'static str {
        "Ask the user one or more short questions when you cannot go on \
            without their decision (a choice between approaches, a missing fact). Offer \
            options where you can. Returns the answers by question id; an empty result means \
            nobody could answer, so decide yourself and say what you assumed."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Your id for the question."},
                            "header": {"type": "string", "description": "A heading of a few words."},
                            "question": {"type": "string"},
                            "options": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string"},
                                        "description": {"type": "string"}
                                    },
                                    "required": ["label", "description"],
                                    "additionalProperties": false
                                }
                            }
                        },
                        "required": ["id", "header", "question", "options"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        })
    }

    async fn run(&self, ctx: &ToolContext, args: RequestUserInputArgs) -> Result<String, TurnStop> {
        request_user_input(ctx, ctx.call_id().as_str(), args).await
    }
}

/// Asks, waits for the answers (or the interrupt), and returns them as JSON.
async fn request_user_input(
    ctx: &ToolContext,
    call_id: &str,
    args: RequestUserInputArgs,
) -> Result<String, TurnStop> {
    if args.questions.is_empty() {
        return Ok("`questions` is empty: ask at least one question".to_string());
    }
    let call_id = keel_protocol::CallId::new(call_id);
    let answers = ctx.host.register_user_input(call_id.clone());
    ctx.host
        .send_event(
            &ctx.ids.sub_id,
            EventMsg::RequestUserInput(RequestUserInputEvent {
                call_id: call_id.clone(),
                turn_id: ctx.ids.turn_id.clone(),
                questions: args.questions,
            }),
        )
        .await;
    let response = tokio::select! {
        () = ctx.cancel.cancelled() => {
            ctx.host.forget_user_input(&call_id);
            return Err(TurnStop::Interrupted);
        }
        response = answers => response.unwrap_or_default(),
    };
    if response.answers.is_empty() {
        return Ok(json!({
            "answers": {},
            "note": "the user did not answer (no one could be asked); decide yourself and say what you assumed",
        })
        .to_string());
    }
    Ok(json!({ "answers": response.answers }).to_string())
}
