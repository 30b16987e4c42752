//! Compaction: when the history no longer fits the model's context window (or the user asks),
//! the model is asked for a hand-off summary of the work so far, and the history becomes the
//! user's recent messages plus that summary. The turn then goes on from it.

use std::sync::Arc;

use keel_protocol::{ContextCompactionEvent, EventMsg, TokenCountEvent};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::client::ResponseEvent;
use crate::error::CoreError;
use crate::models::{ContentItem, ResponseItem, SUMMARY_PREFIX, compacted_summary_item};
use crate::prompt_context::build_prompt;
use crate::turn_context::{TurnIds, TurnStop};

/// Keel's instructions for writing the summary.
const COMPACT_INSTRUCTIONS: &str = include_str!("../compact_instructions.md");
/// The user's own messages kept word for word, newest first, up to this many bytes (about
/// 20k tokens).
const USER_MESSAGES_MAX_BYTES: usize = 80 * 1024;

/// Summarises the history and replaces it. On failure the history is left as it was.
/// `trigger` (`manual`: the client asked; `auto`: the context filled up) is what the
/// `PreCompact` and `PostCompact` hooks are told.
pub(crate) async fn compact(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    instructions: Option<&str>,
    trigger: &'static str,
) -> Result<(), TurnStop> {
    let id = format!("compaction-{:08x}", rand::rng().random::<u32>());
    let event = ContextCompactionEvent {
        id,
        turn_id: ids.turn_id.clone(),
    };
    session
        .send_event(
            &ids.sub_id,
            EventMsg::ContextCompactionStarted(event.clone()),
        )
        .await;
    let context = session.turn_context();
    super::hook_points::fire(
        session,
        ids,
        &context,
        crate::hooks::HookEvent::PreCompact,
        Some(trigger),
        serde_json::json!({ "trigger": trigger }),
    )
    .await;
    let history = session.history();
    if context.remote_compaction {
        let compacted = remote_compaction(session, ids, &context, &history, cancel).await?;
        let mut replacement = recent_user_messages(&history);
        replacement.push(compacted);
        session.replace_history(String::new(), replacement).await;
        return finish(session, ids, &context, event, trigger).await;
    }
    let instructions = instructions
        .or(context.compact_prompt.as_deref())
        .unwrap_or(COMPACT_INSTRUCTIONS);
    // The history that no longer fits may not fit the summary request either: its oldest part
    // is left out of the request (not of what is kept) until the request fits.
    let mut skipped = 0;
    let summary = loop {
        let mut request_history = history[skipped..].to_vec();
        request_history.push(ResponseItem::user_text(instructions));
        // The summary is all that is wanted: no tool may be called.
        let mut prompt = build_prompt(&context, request_history, Vec::new());
        let metadata =
            super::request_metadata::request_metadata(session, ids, &context, "compaction");
        // A sub-agent's requests share its tree's session, as Codex's do.
        prompt.conversation_id = Some(metadata.session_id.clone());
        prompt.metadata = Some(metadata);
        match summarise(session, ids, &prompt, cancel).await {
            Err(TurnStop::Failed(err)) if err.is_context_overflow() => {
                match trim_point(&history, skipped) {
                    Some(next) => {
                        tracing::info!(
                            conversation = %session.id(),
                            left_out = next,
                            "the summary request is too long too; leaving out the oldest items"
                        );
                        skipped = next;
                    }
                    None => return Err(TurnStop::Failed(err)),
                }
            }
            other => break other?,
        }
    };
    let mut replacement = recent_user_messages(&history);
    replacement.push(compacted_summary_item(&summary));
    session.replace_history(summary, replacement).await;
    finish(session, ids, &context, event, trigger).await
}

/// Announces a finished compaction and runs the `PostCompact` hooks.
async fn finish(
    session: &Arc<Session>,
    ids: &TurnIds,
    context: &crate::turn_context::TurnContext,
    event: ContextCompactionEvent,
    trigger: &'static str,
) -> Result<(), TurnStop> {
    session
        .send_event(&ids.sub_id, EventMsg::ContextCompacted(event))
        .await;
    super::hook_points::fire(
        session,
        ids,
        context,
        crate::hooks::HookEvent::PostCompact,
        Some(trigger),
        serde_json::json!({ "trigger": trigger }),
    )
    .await;
    Ok(())
}

/// Asks the provider to compact the history (a Responses request whose input ends with a
/// `compaction_trigger` item) and returns the one `compaction` item it answers with. There is
/// no local fallback, as in Codex: a failure fails the compaction.
async fn remote_compaction(
    session: &Session,
    ids: &TurnIds,
    context: &crate::turn_context::TurnContext,
    history: &[ResponseItem],
    cancel: &CancellationToken,
) -> Result<ResponseItem, TurnStop> {
    let failed =
        |why: String| TurnStop::Failed(CoreError::Compaction(format!("remote compaction: {why}")));
    let mut input = history.to_vec();
    input.push(ResponseItem::CompactionTrigger);
    let mut prompt = build_prompt(context, input, Vec::new());
    let metadata = super::request_metadata::request_metadata(session, ids, context, "compaction");
    // A sub-agent's requests share its tree's session, as Codex's do.
    prompt.conversation_id = Some(metadata.session_id.clone());
    prompt.metadata = Some(metadata);
    let items = match sample_items(session, ids, &prompt, cancel).await {
        Ok(items) => items,
        Err(TurnStop::Failed(err)) => return Err(failed(err.to_string())),
        Err(stop) => return Err(stop),
    };
    let total = items.len();
    let mut compactions: Vec<ResponseItem> = items
        .into_iter()
        .filter(|item| matches!(item, ResponseItem::Compaction { .. }))
        .collect();
    match compactions.len() {
        1 => Ok(compactions.remove(0)),
        found => Err(failed(format!(
            "expected exactly one compaction output item, got {found} from {total} output items"
        ))),
    }
}

/// Where the summary request starts next when it was too long starting at `skipped`: half of
/// what is left goes, and never a tool output without its call. `None` when there is nothing
/// left to leave out.
fn trim_point(history: &[ResponseItem], skipped: usize) -> Option<usize> {
    let left = history.len().saturating_sub(skipped);
    if left <= 1 {
        return None;
    }
    let mut next = skipped + left.div_ceil(2);
    while history.get(next).is_some_and(|item| {
        matches!(
            item,
            ResponseItem::FunctionCallOutput { .. } | ResponseItem::CustomToolCallOutput { .. }
        )
    }) {
        next += 1;
    }
    (next < history.len()).then_some(next)
}

/// One model request for the summary; its text is not streamed to the client.
async fn summarise(
    session: &Session,
    ids: &TurnIds,
    prompt: &crate::client::Prompt,
    cancel: &CancellationToken,
) -> Result<String, TurnStop> {
    let summary: String = sample_items(session, ids, prompt, cancel)
        .await?
        .iter()
        .filter_map(ResponseItem::assistant_text)
        .collect();
    if summary.trim().is_empty() {
        return Err(TurnStop::Failed(CoreError::Compaction(
            "the model returned no summary".to_string(),
        )));
    }
    Ok(summary)
}

/// One request whose output items are collected, not streamed to the client; its usage is
/// counted.
async fn sample_items(
    session: &Session,
    ids: &TurnIds,
    prompt: &crate::client::Prompt,
    cancel: &CancellationToken,
) -> Result<Vec<ResponseItem>, TurnStop> {
    let context = session.turn_context();
    let mut stream = tokio::select! {
        () = cancel.cancelled() => return Err(TurnStop::Interrupted),
        stream = context.client.stream(prompt) => stream.map_err(TurnStop::Failed)?,
    };
    let mut items = Vec::new();
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return Err(TurnStop::Interrupted),
            event = stream.next() => event,
        };
        match event {
            Some(Ok(ResponseEvent::OutputItemDone(item))) => items.push(item),
            Some(Ok(ResponseEvent::Completed { token_usage, .. })) => {
                if let Some(usage) = token_usage {
                    let info = session.add_token_usage(&usage, context.model_context_window);
                    session
                        .send_event(
                            &ids.sub_id,
                            EventMsg::TokenCount(TokenCountEvent { info: Some(info) }),
                        )
                        .await;
                }
                break;
            }
            Some(Ok(_)) => {}
            Some(Err(err)) => return Err(TurnStop::Failed(err)),
            None => {
                return Err(TurnStop::Failed(CoreError::Stream(
                    "stream closed before response.completed".to_string(),
                )));
            }
        }
    }
    Ok(items)
}

/// The user's own messages, oldest first, keeping the newest within
/// [`USER_MESSAGES_MAX_BYTES`]; earlier summaries are left out (the new one supersedes them).
fn recent_user_messages(history: &[ResponseItem]) -> Vec<ResponseItem> {
    let mut kept = Vec::new();
    let mut budget = USER_MESSAGES_MAX_BYTES;
    for item in history.iter().rev() {
        let ResponseItem::Message { role, content, .. } = item else {
            continue;
        };
        if role != "user" {
            continue;
        }
        let text: String = content.iter().filter_map(ContentItem::text).collect();
        if text.starts_with(SUMMARY_PREFIX) {
            continue;
        }
        if text.len() > budget {
            if kept.is_empty() {
                // The newest message alone is over the budget: keep its start.
                let mut cut = budget;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                kept.push(ResponseItem::user_text(&text[..cut]));
            }
            break;
        }
        budget -= text.len();
        kept.push(item.clone());
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_user_messages_skip_tools_answers_and_old_summaries() {
        let history = vec![
            ResponseItem::user_text("first request"),
            ResponseItem::FunctionCallOutput {
                call_id: "c1".into(),
                output: "huge tool output".into(),
            },
            compacted_summary_item("old summary"),
            ResponseItem::user_text("second request"),
        ];
        let kept = recent_user_messages(&history);
        assert_eq!(
            kept,
            vec![
                ResponseItem::user_text("first request"),
                ResponseItem::user_text("second request"),
            ]
        );
    }

    #[test]
    fn recent_user_messages_keep_the_newest_within_the_budget() {
        let big = "x".repeat(USER_MESSAGES_MAX_BYTES - 10);
        let history = vec![
            ResponseItem::user_text("oldest, dropped"),
            ResponseItem::user_text(big.clone()),
            ResponseItem::user_text("newest"),
        ];
        let kept = recent_user_messages(&history);
        assert_eq!(
            kept,
            vec![
                ResponseItem::user_text(big),
                ResponseItem::user_text("newest")
            ]
        );
        let huge = vec![ResponseItem::user_text("é".repeat(USER_MESSAGES_MAX_BYTES))];
        let kept = recent_user_messages(&huge);
        assert_eq!(kept.len(), 1);
    }
}
