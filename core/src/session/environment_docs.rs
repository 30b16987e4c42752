//! A remote environment's `AGENTS.md`: read on the exec-server's host before the first turn
//! that needs it (a local thread reads its own when the thread starts).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use keel_protocol::{EventMsg, WarningEvent};

use super::Session;
use crate::turn_context::{TurnContext, TurnIds};

/// The turn's context with the remote environment's project docs, read once per thread; a
/// failed read is retried by the next turn and reported to the client as a warning.
pub(super) async fn with_environment_docs(
    session: &Session,
    ids: &TurnIds,
    context: Arc<TurnContext>,
) -> Arc<TurnContext> {
    if session.processes().is_local() || session.environment_docs_read.load(Ordering::Acquire) {
        return context;
    }
    match session
        .processes()
        .read_project_docs(&context.cwd, context.project_doc_max_bytes)
        .await
    {
        Ok(docs) => {
            session.environment_docs_read.store(true, Ordering::Release);
            if docs.is_none() {
                return context;
            }
            let mut updated = (*context).clone();
            updated.user_instructions = docs;
            session.set_turn_context(updated);
            session.turn_context()
        }
        Err(err) => {
            let message = format!(
                "AGENTS.md could not be read in the remote environment ({err}); this turn runs \
                 without it"
            );
            tracing::warn!("{message}");
            session
                .send_event(&ids.sub_id, EventMsg::Warning(WarningEvent { message }))
                .await;
            context
        }
    }
}
