//! The environment a turn runs in: a move the embedder asked for is made as the turn begins,
//! and a remote environment's `AGENTS.md` is read on the exec-server's host (an editor's,
//! through the editor) before the first turn that needs it (a local thread reads its own
//! when the thread starts).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use keel_protocol::exec_server::FileReadResponse;
use keel_protocol::{EventMsg, WarningEvent};

use super::Session;
use crate::processes::{ExecTarget, ProcessError, ProcessLayer};
use crate::turn_context::{TurnContext, TurnIds};

/// Moves the conversation where the embedder asked (`Conversation::move_to_environment`), if
/// it asked since the last turn began: the live `exec_command` sessions of the old place are
/// closed, processes go to the new place, and the project docs, skills and hooks are those of
/// the new place (none of this host's for a remote one until the turn reads them there).
pub(super) async fn apply_environment_move(session: &Arc<Session>, ids: &TurnIds) {
    let Some(next) = session.environment_switch.take() else {
        return;
    };
    let local = next.target == ExecTarget::InProcess;
    tracing::info!(conversation = %session.id(), local, cwd = %next.cwd.display(), "moving to another environment");
    crate::tools::close_all_sessions(session.as_ref(), ids).await;
    session.processes().retarget(next.target.clone()).await;
    session
        .environment_docs_read
        .store(false, Ordering::Release);
    let mut updated = (*session.turn_context()).clone();
    // Trusted as the thread's own configuration says (with what its client set at start).
    updated.project_trusted = session.agents().config().project_trusted(&next.cwd);
    let cwd = next.cwd;
    let here = updated.project_trusted && local;
    updated.user_instructions = if local {
        crate::prompt_context::read_project_docs(&cwd, updated.project_doc_max_bytes)
    } else {
        None
    };
    updated.skill_roots = crate::skills::with_extra_roots(
        crate::skills::skill_roots(
            &updated.keel_home(),
            crate::skills::user_home().as_deref(),
            &cwd,
            here,
        ),
        &updated.extra_skill_roots,
    );
    updated.skills = Arc::new(
        crate::skills::load_skills(&updated.skill_roots).with_switches(&updated.skill_switches),
    );
    // The project's hooks run on this host: only a local project's count (the embedding
    // program's stay).
    let embedded = updated.hooks.embedded.clone();
    updated.hooks = Arc::new(
        crate::hooks::load_hooks(&updated.keel_home(), &cwd, here).with_embedded(&embedded),
    );
    updated.exec_target = next.target;
    updated.environment = next.environment;
    updated.cwd = cwd;
    session.set_turn_context(updated);
}

/// The turn's context with the project docs of where its files are, read once per thread:
/// a remote environment's on its host (a failed read is retried by the next turn and
/// reported to the client as a warning), or the client's when it serves the files (an
/// editor's buffers); a local thread's others were read from disk when it started.
pub(super) async fn with_environment_docs(
    session: &Session,
    ids: &TurnIds,
    context: Arc<TurnContext>,
) -> Arc<TurnContext> {
    if session.environment_docs_read.load(Ordering::Acquire) {
        return context;
    }
    let read = if let Some((conversation, files)) = session.processes().client_files() {
        Ok(super::client_docs::read_client_project_docs(
            files,
            conversation,
            &context.cwd,
            context.project_doc_max_bytes,
        )
        .await)
    } else if session.processes().is_local() {
        return context;
    } else {
        read_project_docs(
            session.processes(),
            &context.cwd,
            context.project_doc_max_bytes,
        )
        .await
    };
    match read {
        Ok(docs) => {
            session.environment_docs_read.store(true, Ordering::Release);
            if docs.is_none() || docs == context.user_instructions {
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

/// The `AGENTS.md` files from the repository root down to `cwd` where the turn's
/// commands run, joined and capped as `join_project_docs` does.
async fn read_project_docs(
    processes: &ProcessLayer,
    cwd: &Path,
    max_bytes: usize,
) -> Result<Option<String>, ProcessError> {
    if max_bytes == 0 {
        return Ok(None);
    }
    let repo_root = processes.repo_root(cwd).await?;
    let mut texts = Vec::new();
    for dir in crate::prompt_context::project_doc_dirs(cwd, repo_root.as_deref()) {
        let file = dir.join("AGENTS.md");
        // Read whole (as far as one message allows) and cut when joined, as locally.
        match processes
            .read_file(&file, keel_exec_server::files::MAX_READ_BYTES)
            .await?
        {
            FileReadResponse::Read { data_base64 } => {
                texts.push(String::from_utf8_lossy(&data_base64.0).into_owned());
            }
            FileReadResponse::Missing => {}
            FileReadResponse::TooLarge { size } => {
                tracing::warn!(file = %file.display(), size, "AGENTS.md over the limit; skipped");
            }
            FileReadResponse::Unreadable { message } => {
                tracing::warn!(file = %file.display(), %message, "AGENTS.md unreadable; skipped");
            }
        }
    }
    Ok(crate::prompt_context::join_project_docs(texts, max_bytes))
}
