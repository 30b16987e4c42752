//! `thread/inject_items`: Responses API items added to a thread's model history (the TUI's
//! `/side` gives its side conversation ground rules this way); no client is shown them.

use keel_protocol::Op;
use keel_protocol::app_server::{EmptyResponse, ThreadInjectItemsParams};

use super::Reply;
use super::loaded::loaded;
use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// Checks every item first (one bad item adds none) and hands them to the engine before
/// answering `{}`, so a `turn/start` sent after the answer comes after them.
pub(crate) async fn inject(state: &AppState, params: ThreadInjectItemsParams) -> Result<Reply> {
    let invalid = |message: String| AppServerError::InvalidParams {
        method: "thread/inject_items".into(),
        message,
    };
    if params.items.is_empty() {
        return Err(invalid("`items` must not be empty".into()));
    }
    for (index, item) in params.items.iter().enumerate() {
        keel_core::injectable_item(item.clone())
            .map_err(|err| invalid(format!("items[{index}]: {err}")))?;
    }
    let thread = loaded(state, &params.thread_id).await?;
    thread
        .conversation
        .submit(Op::InjectItems {
            items: params.items,
        })
        .await?;
    Reply::now(&EmptyResponse::default())
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadInjectItems, |ctx, p| inject(ctx.state, p).await);
