//! The environment a turn runs in: a move the embedder asked for is made as the turn begins,
//! and a remote environment's `AGENTS.md` is read on the exec-server's host before the first
//! turn that needs it (a local thread reads its own when the thread starts).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use keel_protocol::{EventMsg, WarningEvent};

use super::Session;
use crate::processes::ExecTarget;
use crate::turn_context::{TurnContext, TurnIds};

/// Moves the conversation where the embedder asked (`Conversation::move_to_environment`), if
/// it asked since the last turn began: processes go to the new place, the old connection and
/// what ran through it end, and the project docs are those of the new place.
pub(super) async fn apply_environment_move(session: &Session) {
    let Some((target, cwd)) = session.environment_switch.take() else {
        return;
    };
    let local = target == ExecTarget::InProcess;
    tracing::info!(conversation = %session.id(), local, cwd = %cwd.display(), "moving to another environment");
    session.processes().retarget(target).await;
    session
        .environment_docs_read
        .store(false, Ordering::Release);
    let mut updated = (*session.turn_context()).clone();
    updated.user_instructions = if local {
        crate::prompt_context::read_project_docs(&cwd, updated.project_doc_max_bytes)
    } else {
        None
    };
    // This host's project skills from here on, or (remote) none until the turn reads them there.
    updated.skill_roots = crate::skills::skill_roots(
        &updated.keel_home(),
        crate::skills::user_home().as_deref(),
        &cwd,
        updated.project_trusted && local,
    );
    // The project's hooks run on this host: only a local project's count (the embedding
    // program's stay).
    let embedded = updated.hooks.embedded.clone();
    updated.hooks = std::sync::Arc::new(
        crate::hooks::load_hooks(&updated.keel_home(), &cwd, updated.project_trusted && local)
            .with_embedded(&embedded),
    );
    updated.cwd = cwd;
    session.set_turn_context(updated);
}

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
