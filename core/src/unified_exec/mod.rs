//! The model's interactive processes (`exec_command` / `write_stdin`): processes that outlive
//! the call that started them, named by a small integer the model passes back.
//!
//! A conversation keeps at most [`MAX_SESSIONS`] of them; starting one more closes the least
//! recently used. All are killed when the turn is interrupted or the conversation ends.

mod model_output;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use keel_protocol::{CallId, ParsedCommand};
use tokio::time::Instant;

pub(crate) use model_output::{
    ChunkReport, ProcessStatus, chunk_as_object, head_and_tail, render_chunk,
};

use crate::processes::{HeadTailBuffer, ProcessHandle};

/// Live sessions a conversation may hold.
pub(crate) const MAX_SESSIONS: usize = 64;
/// The first session id handed out; ids grow from there and are never reused.
const FIRST_SESSION_ID: i32 = 1000;
/// Output kept per process for its `exec_command_end` event.
pub(crate) const AGGREGATED_OUTPUT_BYTES: usize = 1024 * 1024;

/// One live process and what its events need to say about it.
pub(crate) struct UnifiedProcess {
    pub handle: ProcessHandle,
    /// The `exec_command` call that started it; its events carry this id.
    pub call_id: CallId,
    /// What the model asked for, as shown to users.
    pub command: Vec<String>,
    /// The model's `cmd`, repeated in every poll's output.
    pub cmd: String,
    pub cwd: PathBuf,
    pub parsed_cmd: Vec<ParsedCommand>,
    pub tty: bool,
    pub started: Instant,
    /// Everything it printed (bounded), for the end event.
    pub aggregated: HeadTailBuffer,
    /// Its end was reported (by the call that saw it exit, or by whoever closed it): the
    /// other path must not report it again.
    pub ended: bool,
}

/// A process the model can reach, shared between the map and the call using it.
pub(crate) type SharedProcess = Arc<tokio::sync::Mutex<UnifiedProcess>>;

struct Entry<P> {
    process: P,
    last_used: Instant,
    summary: BackgroundTerminal,
}

/// A process the model left running, as a client lists it (the TUI's `/ps`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundTerminal {
    /// The session id the model passes to `write_stdin`.
    pub process_id: String,
    /// The `exec_command` call that started it (the id of its command item).
    pub item_id: String,
    /// The command line, as shown to users.
    pub command: String,
    /// Where it runs.
    pub cwd: PathBuf,
}

struct Sessions<P> {
    by_id: BTreeMap<i32, Entry<P>>,
    next_id: Option<i32>,
}

/// The live `exec_command` sessions of one conversation.
pub(crate) type UnifiedExecSessions = SessionTable<SharedProcess>;

/// Live sessions by id, at most [`MAX_SESSIONS`], the least recently used given up first.
pub(crate) struct SessionTable<P> {
    sessions: Mutex<Sessions<P>>,
}

impl<P> Default for SessionTable<P> {
    fn default() -> Self {
        Self {
            sessions: Mutex::new(Sessions {
                by_id: BTreeMap::new(),
                next_id: None,
            }),
        }
    }
}

/// A session closed to make room for a new one.
pub(crate) struct Pruned<P> {
    pub id: i32,
    pub process: P,
}

impl<P: Clone> SessionTable<P> {
    fn lock(&self) -> MutexGuard<'_, Sessions<P>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves the id of a process about to start.
    pub(crate) fn next_id(&self) -> i32 {
        let mut sessions = self.lock();
        let id = sessions.next_id.unwrap_or(FIRST_SESSION_ID);
        sessions.next_id = Some(id.saturating_add(1));
        id
    }

    /// Keeps a process that is still running after its call; when the conversation is at its
    /// limit, the least recently used session is removed and returned for the caller to stop.
    pub(crate) fn insert(
        &self,
        id: i32,
        process: P,
        summary: BackgroundTerminal,
    ) -> Option<Pruned<P>> {
        let mut sessions = self.lock();
        let pruned = if sessions.by_id.len() >= MAX_SESSIONS {
            let oldest = sessions
                .by_id
                .iter()
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(id, _)| *id);
            oldest.and_then(|id| {
                sessions.by_id.remove(&id).map(|entry| Pruned {
                    id,
                    process: entry.process,
                })
            })
        } else {
            None
        };
        sessions.by_id.insert(
            id,
            Entry {
                process,
                last_used: Instant::now(),
                summary,
            },
        );
        pruned
    }

    /// The process with this id, marked as just used.
    pub(crate) fn get(&self, id: i32) -> Option<P> {
        let mut sessions = self.lock();
        let entry = sessions.by_id.get_mut(&id)?;
        entry.last_used = Instant::now();
        Some(entry.process.clone())
    }

    /// Forgets a process (it exited, or the model is done with it).
    pub(crate) fn remove(&self, id: i32) {
        self.lock().by_id.remove(&id);
    }

    /// The ids of the live sessions, for error messages.
    pub(crate) fn ids(&self) -> Vec<i32> {
        self.lock().by_id.keys().copied().collect()
    }

    /// The live sessions, oldest id first.
    pub(crate) fn summaries(&self) -> Vec<BackgroundTerminal> {
        self.lock()
            .by_id
            .values()
            .map(|entry| entry.summary.clone())
            .collect()
    }

    /// Removes every session and returns them, for the caller to stop.
    pub(crate) fn take_all(&self) -> Vec<(i32, P)> {
        std::mem::take(&mut self.lock().by_id)
            .into_iter()
            .map(|(id, entry)| (id, entry.process))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_session_makes_room() {
        let table = SessionTable::<&str>::default();
        let ids: Vec<i32> = (0..MAX_SESSIONS).map(|_| table.next_id()).collect();
        assert_eq!(ids.first(), Some(&FIRST_SESSION_ID));
        let summary = |id: i32| BackgroundTerminal {
            process_id: id.to_string(),
            item_id: format!("call-{id}"),
            command: "sleep 1".into(),
            cwd: PathBuf::from("/"),
        };
        for id in &ids {
            assert!(table.insert(*id, "running", summary(*id)).is_none());
            tokio::time::advance(std::time::Duration::from_millis(1)).await;
        }
        // Touching the oldest makes the second oldest the least recently used.
        assert_eq!(table.get(ids[0]), Some("running"));
        tokio::time::advance(std::time::Duration::from_millis(1)).await;
        let new = table.next_id();
        let pruned = table.insert(new, "new", summary(new));
        assert_eq!(pruned.map(|pruned| pruned.id), Some(ids[1]));
        assert_eq!(table.ids().len(), MAX_SESSIONS);
        assert!(table.get(ids[1]).is_none());
        let listed = table.summaries();
        assert_eq!(listed.len(), MAX_SESSIONS);
        assert!(
            !listed
                .iter()
                .any(|terminal| terminal.process_id == ids[1].to_string())
        );
        assert_eq!(table.take_all().len(), MAX_SESSIONS);
        assert!(table.ids().is_empty());
    }
}
