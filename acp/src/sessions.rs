//! The editor's sessions (each a Keel thread, by its id) and what `keel acp` keeps of each
//! while it runs: the turn, the prompt waiting for it, the approvals waiting for the editor.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use keel_protocol::JsonRpcErrorObject;
use keel_protocol::RequestId;
use keel_protocol::acp::{SessionUpdate, StopReason};
use keel_protocol::app_server::FileUpdateChange;
use tokio::sync::oneshot;

/// How a prompt ends: a stop reason, or an error for the editor.
pub(crate) type PromptEnd = Result<StopReason, JsonRpcErrorObject>;

/// One session's running state.
#[derive(Default)]
pub(crate) struct Session {
    /// The running turn.
    pub turn: Option<String>,
    /// The `session/prompt` waiting for the turn to end.
    pub prompt: Option<oneshot::Sender<PromptEnd>>,
    /// The editor cancelled the running turn.
    pub cancelled: bool,
    /// Approval requests of the engine waiting for the editor's answer.
    pub approvals: HashSet<RequestId>,
    /// Agent messages whose text was streamed (the rest are sent whole when they complete).
    pub streamed: HashSet<String>,
    /// The changes of file-change items, for their permission requests.
    pub changes: HashMap<String, Vec<FileUpdateChange>>,
    /// The session's mode, model and reasoning effort pickers.
    pub pickers: Option<crate::modes::Pickers>,
    /// Tool calls already announced to the editor (so a terminal can be shown in them).
    pub announced: HashSet<String>,
    /// The editor's terminal running each command tool call, by call id.
    pub terminals: HashMap<String, String>,
    /// The session's working directory.
    pub cwd: std::path::PathBuf,
    /// Notices set aside while the session was opened, for once the editor has it.
    pub notices: Vec<String>,
    /// For a sub-agent's session: the session whose agent started it.
    pub parent: Option<String>,
    /// While the session is opened: the live updates that arrived meanwhile, sent once it is
    /// open (after its replay) so none is lost or interleaved with the history.
    pub held: Option<Vec<SessionUpdate>>,
}

/// Every session of this connection.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<HashMap<String, Session>>);

impl Sessions {
    /// Registers a session with its pickers, its working directory and the notices for it;
    /// live updates held for it (see [`Self::hold`]) stay held.
    pub(crate) fn add(
        &self,
        id: &str,
        pickers: crate::modes::Pickers,
        cwd: std::path::PathBuf,
        notices: Vec<String>,
    ) {
        let mut sessions = self.lock();
        let held = sessions.get_mut(id).and_then(|session| session.held.take());
        sessions.insert(
            id.to_string(),
            Session {
                pickers: Some(pickers),
                cwd,
                notices,
                held,
                ..Session::default()
            },
        );
    }

    /// Holds live updates for session `id` while it is opened (its thread resumed, its
    /// history replayed), so none is dropped before the session is known here or sent into
    /// the middle of the replay; [`Self::release_held`] gives them back. Whether the session
    /// is new here (to forget it if the open fails).
    pub(crate) fn hold(&self, id: &str, cwd: std::path::PathBuf) -> bool {
        let mut sessions = self.lock();
        match sessions.get_mut(id) {
            Some(session) => {
                session.held.get_or_insert_with(Vec::new);
                false
            }
            None => {
                sessions.insert(
                    id.to_string(),
                    Session {
                        cwd,
                        held: Some(Vec::new()),
                        ..Session::default()
                    },
                );
                true
            }
        }
    }

    /// Keeps `update` for session `id` while the session is being opened; gives it back when
    /// it can be sent now.
    pub(crate) fn hold_while_opening(
        &self,
        id: &str,
        update: SessionUpdate,
    ) -> Option<SessionUpdate> {
        match self
            .lock()
            .get_mut(id)
            .and_then(|session| session.held.as_mut())
        {
            Some(held) => {
                held.push(update);
                None
            }
            None => Some(update),
        }
    }

    /// The live updates held back since the last call, once the session is open; when none
    /// are left the session stops holding, so nothing live can overtake what was held.
    pub(crate) fn release_held(&self, id: &str) -> Vec<SessionUpdate> {
        let mut sessions = self.lock();
        let Some(session) = sessions.get_mut(id) else {
            return Vec::new();
        };
        match session.held.as_mut() {
            Some(held) if !held.is_empty() => std::mem::take(held),
            _ => {
                session.held = None;
                Vec::new()
            }
        }
    }

    /// Registers the session of a sub-agent that session `parent`'s agent started.
    pub(crate) fn add_child(&self, id: &str, parent: &str, cwd: std::path::PathBuf) {
        self.lock().insert(
            id.to_string(),
            Session {
                parent: Some(parent.to_string()),
                cwd,
                ..Session::default()
            },
        );
    }

    /// The editor's own session `id` belongs to: itself, or the one a sub-agent's session
    /// descends from; `None` when `id` is no session here.
    pub(crate) fn top_of(&self, id: &str) -> Option<String> {
        let sessions = self.lock();
        let mut current = id;
        // Bounded by the number of sessions, so a loop in the records cannot hang.
        for _ in 0..=sessions.len() {
            match sessions.get(current)?.parent.as_deref() {
                Some(parent) => current = parent,
                None => return Some(current.to_string()),
            }
        }
        None
    }

    /// Forgets a session; whether it was there.
    pub(crate) fn remove(&self, id: &str) -> bool {
        self.lock().remove(id).is_some()
    }

    /// Runs `change` on session `id`; `None` when there is no such session.
    pub(crate) fn with<T>(&self, id: &str, change: impl FnOnce(&mut Session) -> T) -> Option<T> {
        self.lock().get_mut(id).map(change)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
