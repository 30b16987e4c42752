//! `thread/shellCommand`: the user's own command (the TUI's `!cmd`), run by the engine in the
//! thread's working directory under the thread's sandbox.

use keel_protocol::Op;
use keel_protocol::app_server::{EmptyResponse, ThreadShellCommandParams};

use super::Reply;
use super::loaded::loaded;
use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// Answers `{}`, then the command runs: a turn of its own (`turn/started`, a
/// `commandExecution` item with source `userShell`, `turn/completed`), or an item of the
/// running turn, whose model sees it next.
pub(crate) async fn run(state: &AppState, params: ThreadShellCommandParams) -> Result<Reply> {
    let invalid = |message: String| AppServerError::InvalidParams {
        method: "thread/shellCommand".into(),
        message,
    };
    if params.command.trim().is_empty() {
        return Err(invalid("`command` must not be empty".into()));
    }
    let timeout_ms = match params.timeout_ms {
        None => None,
        Some(ms) => Some(
            u64::try_from(ms)
                .map_err(|_| invalid(format!("`timeoutMs` must not be negative, got {ms}")))?,
        ),
    };
    let thread = loaded(state, &params.thread_id).await?;
    let conversation = thread.conversation.clone();
    let command = params.command;
    Reply::then(&EmptyResponse::default(), async move {
        let op = Op::RunUserShellCommand {
            command,
            timeout_ms,
        };
        if let Err(err) = conversation.submit(op).await {
            tracing::warn!("the shell command could not be submitted: {err}");
        }
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ThreadShellCommand, |ctx, p| run(ctx.state, p).await);
