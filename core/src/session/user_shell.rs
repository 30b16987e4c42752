//! The user's own commands (`Op::RunUserShellCommand`): a turn of their own when the
//! conversation is idle, else part of the running turn, whose model sees them next.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use keel_protocol::{CallId, SubmissionId, TurnId};
use tokio_util::sync::CancellationToken;

use super::Session;
use super::turn::TurnTask;
use crate::models::ResponseItem;
use crate::tools::{ToolContext, ToolHost, TurnDiffTracker};
use crate::turn_context::{TurnIds, TurnStop};

/// How long a user's command may run when the client names no limit.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Starts the command: a turn of its own, or beside the running turn.
pub(super) fn start(
    session: &Arc<Session>,
    sub_id: SubmissionId,
    command: String,
    timeout_ms: Option<u64>,
) {
    let timeout = timeout_ms.map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    let running = session
        .state()
        .active_turn
        .as_ref()
        .map(|turn| (turn.sub_id.clone(), turn.cancel.clone()));
    let Some((turn_sub, cancel)) = running else {
        super::submission_loop::start_turn(
            session,
            sub_id,
            TurnTask::UserShell { command, timeout },
        );
        return;
    };
    let session = session.clone();
    tokio::spawn(async move {
        let ids = TurnIds {
            turn_id: TurnId::new(turn_sub.as_str()),
            sub_id: turn_sub,
            output_schema: None,
        };
        // The running turn's model sees it with its next request.
        if let Ok(note) = run(&session, &ids, &cancel, &command, timeout).await {
            session.queue_input(note);
        }
    });
}

/// Runs the command under the turn's settings; returns the history note.
pub(super) async fn run(
    session: &Arc<Session>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    command: &str,
    timeout: Duration,
) -> Result<ResponseItem, TurnStop> {
    let host: Arc<dyn ToolHost> = session.clone();
    let context = ToolContext {
        host,
        turn: session.turn_context(),
        ids: Arc::new(ids.clone()),
        cancel: cancel.clone(),
        call_id: CallId::new(format!("user-shell-{}", ids.turn_id)),
        diff: Arc::new(Mutex::new(TurnDiffTracker::default())),
    };
    context.builtin().user_shell(command, timeout).await
}
