//! The `request_user_input` tool: the turn waits for the user's answers to the model's
//! questions (the app-server asks its clients; a client that cannot ask answers empty).

use keel_protocol::{EventMsg, RequestUserInputEvent, UserInputQuestion};
use serde::Deserialize;
use serde_json::json;

use super::ToolContext;
use crate::turn_context::TurnStop;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestUserInputArgs {
    questions: Vec<UserInputQuestion>,
}

super::builtin_tool!(
    /// `request_user_input`: asks the user questions and waits for the answers.
    RequestUserInputTool,
    "request_user_input",
    super::spec::request_user_input_tool(),
    |call, call_id, arguments| request_user_input(call, &call_id, arguments).await
);

/// Asks, waits for the answers (or the interrupt), and returns them as JSON.
async fn request_user_input(
    ctx: &ToolContext,
    call_id: &str,
    arguments: &str,
) -> Result<String, TurnStop> {
    let args: RequestUserInputArgs = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(err) => {
            return Ok(format!(
                "failed to parse request_user_input arguments: {err}"
            ));
        }
    };
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
