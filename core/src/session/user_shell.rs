//! Running the user's own command (`Op::RunUserShellCommand`) under the turn's settings, as
//! the body of a turn of its own or beside the running turn (see [`super::ops::turns`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use keel_protocol::CallId;
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::models::ResponseItem;
use crate::tools::{ToolContext, ToolHost, TurnDiffTracker};
use crate::turn_context::{TurnIds, TurnStop};

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
        trace: crate::telemetry::ToolTrace::default(),
    };
    crate::tools::run_user_shell(&context, command, timeout).await
}
