//! Read states kept beside each thread in a store every server shares: a change is written
//! only when the state still reads what this server saw, so two servers marking one thread
//! at once never lose either change.

use keel_core::{NoteSwap, ThreadCatalog, ThreadNotes};
use keel_protocol::ConversationId;
use keel_protocol::app_server::{ThreadReadState, ThreadReadStateOperation};

use super::rules;
use crate::error::{AppServerError, Result};

/// The note a thread's read state is kept under.
const KEY: &str = "readState";

/// How many times a change is tried again when another server changed the state first.
const ATTEMPTS: usize = 8;

fn parse(id: ConversationId, raw: Option<&str>) -> ThreadReadState {
    raw.and_then(|raw| match serde_json::from_str(raw) {
        Ok(state) => Some(state),
        Err(err) => {
            tracing::warn!(thread = %id, "ignoring an unreadable read state: {err}");
            None
        }
    })
    .unwrap_or_else(|| rules::initial(id))
}

fn encode(state: &ThreadReadState) -> Result<String> {
    serde_json::to_string(state)
        .map_err(|err| AppServerError::Internal(format!("read state: {err}")))
}

fn notes(catalog: &dyn ThreadCatalog) -> Result<&dyn ThreadNotes> {
    catalog
        .notes()
        .ok_or_else(|| AppServerError::Internal("the thread store keeps no notes".to_string()))
}

/// The thread's state.
pub(super) async fn get(
    catalog: &dyn ThreadCatalog,
    id: ConversationId,
) -> Result<ThreadReadState> {
    let raw = notes(catalog)?.note(id, KEY).await?;
    Ok(parse(id, raw.as_deref()))
}

/// Applies `edit` to the current state, again on what another server wrote first.
pub(super) async fn change(
    catalog: &dyn ThreadCatalog,
    id: ConversationId,
    edit: impl Fn(&mut ThreadReadState),
) -> Result<ThreadReadState> {
    let notes = notes(catalog)?;
    let mut raw = notes.note(id, KEY).await?;
    for _ in 0..ATTEMPTS {
        let mut state = parse(id, raw.as_deref());
        edit(&mut state);
        state.revision = rules::new_revision();
        match notes
            .swap_note(id, KEY, raw.clone(), Some(encode(&state)?))
            .await?
        {
            NoteSwap::Done => return Ok(state),
            NoteSwap::Changed(now) => raw = now,
        }
    }
    Err(AppServerError::Internal(format!(
        "thread {id}'s read state kept changing under this server ({ATTEMPTS} attempts)"
    )))
}

/// A person's `read`/`unread`, refused when `expected` is not the current revision.
pub(super) async fn update(
    catalog: &dyn ThreadCatalog,
    id: ConversationId,
    operation: ThreadReadStateOperation,
    expected: Option<&str>,
) -> Result<ThreadReadState> {
    let notes = notes(catalog)?;
    let raw = notes.note(id, KEY).await?;
    let mut state = parse(id, raw.as_deref());
    if expected.is_some_and(|expected| expected != state.revision) {
        return Err(AppServerError::ReadStateConflict(state));
    }
    rules::apply(&mut state, operation);
    state.revision = rules::new_revision();
    match notes.swap_note(id, KEY, raw, Some(encode(&state)?)).await? {
        NoteSwap::Done => Ok(state),
        // Another server marked it between the read and the write: the person saw an older
        // state, as with a stale `expected` revision.
        NoteSwap::Changed(now) => Err(AppServerError::ReadStateConflict(parse(id, now.as_deref()))),
    }
}
