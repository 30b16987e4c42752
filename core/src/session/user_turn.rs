//! The usual turn's body: the user's input joins the history (with the skills it names and
//! the context hooks add) and the model answers it.

use std::sync::Arc;

use keel_protocol::{EventMsg, InputItem};
use tokio_util::sync::CancellationToken;

use super::Session;
use super::input_items::{user_input_items, user_message_event};
use super::sampling::{auto_compact_if_full, turn_loop};
use crate::turn_context::{TurnContext, TurnIds, TurnStop};

/// Answers `input`; `Ok` with the model's last message (`None` when a hook dropped the prompt).
pub(super) async fn answer(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    context: Arc<TurnContext>,
    input: Vec<InputItem>,
) -> Result<Option<String>, TurnStop> {
    // A context filled by the previous turn is compacted before the new input joins it, so the
    // summary comes before the request it is meant to serve.
    auto_compact_if_full(session, ids, cancel).await?;
    let context = super::environment::with_environment_docs(session, ids, context).await;
    let context = super::hook_points::refresh_skills(session, ids, context.clone()).await;
    let context = super::hook_points::refresh_hook_choices(session, context);
    super::hook_points::warn_held_back_once(session, ids, &context).await;
    let source = if session.history().is_empty() {
        "startup"
    } else {
        "resume"
    };
    let start_context =
        super::hook_points::session_start_once(session, ids, &context, source).await;
    session.record_items(&start_context).await;
    let message = user_message_event(&input);
    let hook_context = match super::hook_points::user_prompt_submit(
        session,
        ids,
        &context,
        &message.message,
    )
    .await
    {
        Ok(hook_context) => hook_context,
        // A hook dropped the prompt: the turn ends with nothing recorded.
        Err(reason) => {
            tracing::info!(conversation = %session.id(), "a UserPromptSubmit hook dropped the prompt: {reason}");
            return Ok(None);
        }
    };
    // Skills the user names (`$name`) come with the message they are named in; hook context
    // follows.
    let mut items = user_input_items(&context.cwd, &input);
    items.extend(crate::skills::attached_skill_items(&context.skills, &input));
    items.extend(hook_context);
    session.record_items(&items).await;
    session
        .send_event(&ids.sub_id, EventMsg::UserMessage(message))
        .await;
    turn_loop(session, ids, cancel).await
}
