//! Read states as files: one small file per thread under `KEEL_HOME/read-state/`, so the
//! state outlives the server and is shared by every server on the same home.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use keel_protocol::ConversationId;
use keel_protocol::app_server::{ThreadReadState, ThreadReadStateOperation};

use crate::error::{AppServerError, Result};

/// A held read-modify-write lock.
struct Held<'a> {
    _mutex: std::sync::MutexGuard<'a, ()>,
    _file: Option<nix::fcntl::Flock<std::fs::File>>,
}

/// The read states of the threads under one Keel home.
pub(crate) struct FileReadStates {
    dir: PathBuf,
    /// Serialises this server's read-modify-write cycles.
    writes: Mutex<()>,
}

impl FileReadStates {
    pub(crate) fn new(keel_home: &Path) -> Self {
        Self {
            dir: keel_home.join(super::rules::READ_STATE_DIR),
            writes: Mutex::new(()),
        }
    }

    /// The thread's state; one never marked has nothing unread and an `initial:` revision.
    pub(crate) fn get(&self, id: ConversationId) -> ThreadReadState {
        self.stored(id).unwrap_or_else(|| super::rules::initial(id))
    }

    /// A turn finished with results nobody has seen: the thread becomes unread from its
    /// earliest such turn on.
    pub(crate) fn turn_completed(&self, id: ConversationId, turn_id: &str) -> ThreadReadState {
        self.change(id, |state| super::rules::turn_completed(state, turn_id))
    }

    /// Turns were dropped (`thread/revert`): what was unread went with them.
    pub(crate) fn reverted(&self, id: ConversationId) -> ThreadReadState {
        self.change(id, super::rules::reverted)
    }

    /// A person's `read`/`unread`, refused when `expected` is not the current revision.
    pub(crate) fn update(
        &self,
        id: ConversationId,
        operation: ThreadReadStateOperation,
        expected: Option<&str>,
    ) -> Result<ThreadReadState> {
        let _held = self.lock();
        let mut state = self.get(id);
        if expected.is_some_and(|expected| expected != state.revision) {
            return Err(AppServerError::ReadStateConflict(state));
        }
        super::rules::apply(&mut state, operation);
        state.revision = super::rules::new_revision();
        self.store(id, &state)?;
        Ok(state)
    }

    /// Forgets a deleted thread's state.
    pub(crate) fn remove(&self, id: ConversationId) {
        let _held = self.lock();
        match std::fs::remove_file(self.path(id)) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!(thread = %id, "cannot remove its read state: {err}"),
        }
    }

    fn change(
        &self,
        id: ConversationId,
        edit: impl FnOnce(&mut ThreadReadState),
    ) -> ThreadReadState {
        let _held = self.lock();
        let mut state = self.get(id);
        edit(&mut state);
        state.revision = super::rules::new_revision();
        if let Err(err) = self.store(id, &state) {
            // The state is still announced; it is only not remembered across restarts.
            tracing::warn!(thread = %id, "cannot record its read state: {err}");
        }
        state
    }

    /// Held across a read-modify-write: this server's threads wait on the mutex, other
    /// servers on the same home on an OS lock of `read-state/.lock` (released when closed).
    fn lock(&self) -> Held<'_> {
        let mutex = self
            .writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let file = std::fs::create_dir_all(&self.dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(self.dir.join(".lock"))
            })
            .and_then(|file| {
                nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                    .map_err(|(_, errno)| std::io::Error::from(errno))
            });
        if let Err(err) = &file {
            tracing::warn!("read states are not locked against other servers: {err}");
        }
        Held {
            _mutex: mutex,
            _file: file.ok(),
        }
    }

    fn path(&self, id: ConversationId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn stored(&self, id: ConversationId) -> Option<ThreadReadState> {
        let bytes = std::fs::read(self.path(id)).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(state) => Some(state),
            Err(err) => {
                tracing::warn!(thread = %id, "ignoring an unreadable read state: {err}");
                None
            }
        }
    }

    /// Written to a temporary file and renamed, so a reader never sees half a state.
    fn store(&self, id: ConversationId, state: &ThreadReadState) -> Result<()> {
        let io = |source| AppServerError::Io {
            path: self.dir.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let bytes = serde_json::to_vec(state)
            .map_err(|err| AppServerError::Internal(format!("read state: {err}")))?;
        let target = self.path(id);
        // Unique to this process; writes within it are serialised by the lock.
        let partial = self.dir.join(format!(".{id}.{}.tmp", std::process::id()));
        std::fs::write(&partial, bytes).map_err(io)?;
        std::fs::rename(&partial, &target).map_err(io)
    }
}
