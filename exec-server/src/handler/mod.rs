//! The stateful, transport-free side of a connection: the handshake, the processes it
//! started, and typed methods for every request. The JSON-RPC processor drives it from the
//! wire; the in-process client drives it directly.

mod output;
mod retained;
mod running_process;
mod spawn;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use keel_protocol::ExecSessionId;
use keel_protocol::exec_server::{
    CloseStdinParams, CloseStdinResponse, EXEC_SERVER_EXTENSIONS, EXEC_SERVER_PROTOCOL_VERSION,
    ExecParams, ExecResponse, FileListParams, FileListResponse, FileReadParams, FileReadResponse,
    FileStatParams, FileStatResponse, InitializeParams, InitializeResponse, PatchApplyResponse,
    PatchParams, PatchPlanResponse, ResizeParams, ResizeResponse, SnapshotParams, SnapshotResponse,
    TerminateMode, TerminateParams, TerminateResponse, WaitParams, WaitResponse, WriteParams,
    WriteResponse,
};
use nix::sys::signal::Signal;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::output::{IDLE_READ_BUFFERS, READ_CHUNK_BYTES};
use self::running_process::{Phase, RunningProcess, SuperviseContext};
use crate::buffers::BufferPool;
use crate::config::ExecServerConfig;
use crate::error::{ExecServerError, Result};
use crate::event::ExecServerEvent;

/// Events queued between the processes of one connection and its writer. Full: the output
/// pumps stop reading their pipes, so the children block on write until the client catches
/// up. Bounds a connection's buffered output to this many chunks of at most
/// 256 KiB each.
pub const EVENT_CHANNEL_CAPACITY: usize = 16;

/// Finished sessions a connection remembers for `snapshot` and `wait`; older ones are
/// forgotten (their ids then answer "unknown session"), so a long-lived connection that runs
/// many processes keeps bounded memory.
const FINISHED_SESSIONS_KEPT: usize = 256;

/// Upper bound on reaping after SIGKILL during shutdown (a process in uninterruptible sleep).
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the connection is in the `initialize` / `initialized` handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    Fresh,
    Initializing,
    Ready,
}

struct State {
    handshake: Handshake,
    sessions: HashMap<ExecSessionId, Arc<RunningProcess>>,
    finished: VecDeque<ExecSessionId>,
    running: usize,
    next_id: u64,
    shutting_down: bool,
}

struct Inner {
    config: ExecServerConfig,
    events: mpsc::Sender<ExecServerEvent>,
    state: Mutex<State>,
    tasks: TaskTracker,
    cancel: CancellationToken,
    /// Read buffers shared by every output stream of the connection.
    output_buffers: BufferPool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Supervisors SIGKILL their process groups and reap them when cancelled.
        self.cancel.cancel();
    }
}

/// Holds back a new process's output until dropped (see [`ExecServerHandler::exec`]).
pub(crate) struct StartGate(
    #[expect(dead_code, reason = "released by being dropped")] oneshot::Sender<()>,
);

/// The processes of one connection, driven through typed methods.
///
/// Cheap to clone; clones share the same state. Dropping the last clone kills every process
/// it started (SIGKILL to each group); [`ExecServerHandler::shutdown`] does it gracefully.
#[derive(Clone)]
pub struct ExecServerHandler {
    inner: Arc<Inner>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ExecServerHandler {
    /// A handler for one connection and the receiver of its events (output and exits).
    /// The receiver must be drained: when it is full, the processes' output stalls.
    pub fn new(config: ExecServerConfig) -> (Self, mpsc::Receiver<ExecServerEvent>) {
        let (events, events_rx) = mpsc::channel(EVENT_CHANNEL_CAPACITY);
        let inner = Arc::new(Inner {
            config,
            events,
            state: Mutex::new(State {
                handshake: Handshake::Fresh,
                sessions: HashMap::new(),
                finished: VecDeque::new(),
                running: 0,
                next_id: 1,
                shutting_down: false,
            }),
            tasks: TaskTracker::new(),
            cancel: CancellationToken::new(),
            output_buffers: BufferPool::new(READ_CHUNK_BYTES, IDLE_READ_BUFFERS),
        });
        (Self { inner }, events_rx)
    }

    /// The server configuration.
    pub fn config(&self) -> &ExecServerConfig {
        &self.inner.config
    }

    /// Handles `initialize`; a second call fails.
    pub async fn initialize(&self, params: InitializeParams) -> Result<InitializeResponse> {
        let mut state = lock(&self.inner.state);
        if state.handshake != Handshake::Fresh {
            return Err(ExecServerError::AlreadyInitialized);
        }
        state.handshake = Handshake::Initializing;
        tracing::debug!(client = %params.client_name, "initialize");
        Ok(InitializeResponse {
            protocol_version: EXEC_SERVER_PROTOCOL_VERSION.to_string(),
            extensions: EXEC_SERVER_EXTENSIONS
                .iter()
                .map(|name| name.to_string())
                .collect(),
        })
    }

    /// Handles the `initialized` notification; before `initialize` it is a protocol error.
    pub async fn initialized(&self) -> Result<()> {
        let mut state = lock(&self.inner.state);
        match state.handshake {
            Handshake::Fresh => Err(ExecServerError::Protocol(
                "`initialized` arrived before `initialize`".to_string(),
            )),
            Handshake::Initializing | Handshake::Ready => {
                state.handshake = Handshake::Ready;
                Ok(())
            }
        }
    }

    fn ready(&self, method: &'static str) -> Result<MutexGuard<'_, State>> {
        let state = lock(&self.inner.state);
        match state.handshake {
            Handshake::Fresh => Err(ExecServerError::NotInitialized { method }),
            Handshake::Initializing => Err(ExecServerError::HandshakeIncomplete { method }),
            Handshake::Ready => Ok(state),
        }
    }

    fn session(&self, method: &'static str, id: &ExecSessionId) -> Result<Arc<RunningProcess>> {
        self.ready(method)?
            .sessions
            .get(id)
            .cloned()
            .ok_or_else(|| ExecServerError::UnknownSession(id.clone()))
    }

    /// Handles `patch/plan`: checks a patch against this host's files and the policy sent.
    pub async fn plan_patch(&self, params: PatchParams) -> Result<PatchPlanResponse> {
        drop(self.ready("patch/plan")?);
        tokio::task::spawn_blocking(move || crate::patch::plan(&params))
            .await
            .map_err(|err| ExecServerError::Protocol(format!("patch/plan failed: {err}")))
    }

    /// Handles `patch/apply`: writes a patch on this host, all or nothing, under the policy.
    pub async fn apply_patch(&self, params: PatchParams) -> Result<PatchApplyResponse> {
        drop(self.ready("patch/apply")?);
        tokio::task::spawn_blocking(move || crate::patch::apply(&params))
            .await
            .map_err(|err| ExecServerError::Protocol(format!("patch/apply failed: {err}")))
    }

    /// Handles `fs/read`: a file of this host, for a turn that works here.
    pub async fn read_file(&self, params: FileReadParams) -> Result<FileReadResponse> {
        drop(self.ready("fs/read")?);
        require_absolute("fs/read", &params.path)?;
        tracing::debug!(path = %params.path.display(), "fs/read");
        tokio::task::spawn_blocking(move || crate::files::read(&params))
            .await
            .map_err(|err| ExecServerError::Protocol(format!("fs/read failed: {err}")))
    }

    /// Handles `fs/list`: a directory of this host.
    pub async fn list_dir(&self, params: FileListParams) -> Result<FileListResponse> {
        drop(self.ready("fs/list")?);
        require_absolute("fs/list", &params.path)?;
        tokio::task::spawn_blocking(move || crate::files::list(&params))
            .await
            .map_err(|err| ExecServerError::Protocol(format!("fs/list failed: {err}")))
    }

    /// Handles `fs/stat`: whether a path of this host exists, and what it is.
    pub async fn stat_file(&self, params: FileStatParams) -> Result<FileStatResponse> {
        drop(self.ready("fs/stat")?);
        require_absolute("fs/stat", &params.path)?;
        tokio::task::spawn_blocking(move || crate::files::stat(&params))
            .await
            .map_err(|err| ExecServerError::Protocol(format!("fs/stat failed: {err}")))
    }

    /// Handles `command/exec`: starts the process and returns its session id.
    pub async fn exec(&self, params: ExecParams) -> Result<ExecResponse> {
        self.exec_gated(params).map(|(response, _gate)| response)
    }

    /// Like [`Self::exec`], but the process's output is held back until the gate drops, so
    /// the caller can queue the response first.
    pub(crate) fn exec_gated(&self, params: ExecParams) -> Result<(ExecResponse, StartGate)> {
        const METHOD: &str = "command/exec";
        let mut state = self.ready(METHOD)?;
        if state.shutting_down {
            return Err(ExecServerError::ShuttingDown);
        }
        if state.running >= self.inner.config.max_processes {
            return Err(ExecServerError::ProcessLimit {
                limit: self.inner.config.max_processes,
            });
        }
        let spawned = spawn::spawn(&params, self.inner.config.supervisor.as_deref())?;
        let id = ExecSessionId::new(format!("session-{}", state.next_id));
        state.next_id += 1;
        let (gate, start) = oneshot::channel();
        let weak = Arc::downgrade(&self.inner);
        let context = SuperviseContext {
            events: self.inner.events.clone(),
            cancel: self.inner.cancel.child_token(),
            drain_timeout: self.inner.config.output_drain_timeout,
            start,
            on_finished: Box::new(move |id| finished(&weak, id)),
            output_buffers: self.inner.output_buffers.clone(),
        };
        let (session, supervisor) = RunningProcess::start(
            id.clone(),
            spawned,
            self.inner.config.retained_output_bytes,
            context,
        );
        if let Some(span) = crate::telemetry::ProcessSpan::start(
            params.argv.first().map_or("", String::as_str),
            id.as_str(),
            params.traceparent.as_deref(),
        ) {
            let traced = session.clone();
            self.inner.tasks.spawn(async move {
                span.finish(traced.wait(None).await);
            });
        }
        state.sessions.insert(id.clone(), session);
        state.running += 1;
        drop(state);
        self.inner.tasks.spawn(supervisor);
        tracing::debug!(session = %id, argv = ?params.argv, tty = params.tty, "started");
        Ok((ExecResponse { session_id: id }, StartGate(gate)))
    }

    /// Handles `command/exec/write`: queues bytes for a PTY's input.
    pub async fn write(&self, params: WriteParams) -> Result<WriteResponse> {
        let session = self.session("command/exec/write", &params.session_id)?;
        session.write(params.chunk.into_inner())?;
        Ok(WriteResponse { accepted: true })
    }

    /// Handles `command/exec/terminate`. An unknown or finished session answers
    /// `running: false`; without a mode, SIGTERM is followed by SIGKILL after the server's
    /// grace period.
    pub async fn terminate(&self, params: TerminateParams) -> Result<TerminateResponse> {
        let session = match self.session("command/exec/terminate", &params.session_id) {
            Ok(session) => session,
            Err(ExecServerError::UnknownSession(_)) => {
                return Ok(TerminateResponse { running: false });
            }
            Err(err) => return Err(err),
        };
        let running = session.phase() == Phase::Running;
        if !session.group_may_be_alive() {
            return Ok(TerminateResponse { running });
        }
        let mode = params.mode.unwrap_or(TerminateMode::Graceful {
            timeout_ms: u64::try_from(self.inner.config.shutdown_grace.as_millis())
                .unwrap_or(u64::MAX),
        });
        match mode {
            TerminateMode::Force => session.signal_group(Signal::SIGKILL),
            TerminateMode::Graceful { timeout_ms } => {
                session.signal_group(Signal::SIGTERM);
                let cancel = self.inner.cancel.clone();
                self.inner.tasks.spawn(async move {
                    let exited = session.wait(Some(Duration::from_millis(timeout_ms)));
                    tokio::select! {
                        exit = exited => if exit.is_none() {
                            session.signal_group(Signal::SIGKILL);
                        },
                        () = cancel.cancelled() => {}
                    }
                });
            }
        }
        Ok(TerminateResponse { running })
    }

    /// Handles `command/exec/resize` (PTY-backed sessions only).
    pub async fn resize(&self, params: ResizeParams) -> Result<ResizeResponse> {
        let session = self.session("command/exec/resize", &params.session_id)?;
        session.resize(params.rows, params.cols)?;
        Ok(ResizeResponse {})
    }

    /// Handles `command/exec/closeStdin`: the process sees end of input.
    pub async fn close_stdin(&self, params: CloseStdinParams) -> Result<CloseStdinResponse> {
        let session = self.session("command/exec/closeStdin", &params.session_id)?;
        session.close_stdin();
        Ok(CloseStdinResponse {})
    }

    /// Handles `command/exec/wait`: resolves once the exit is known or the timeout elapses.
    ///
    /// Cancel safe.
    pub async fn wait(&self, params: WaitParams) -> Result<WaitResponse> {
        let session = self.session("command/exec/wait", &params.session_id)?;
        let exit_code = session
            .wait(params.timeout_ms.map(Duration::from_millis))
            .await;
        Ok(WaitResponse {
            exit_code,
            timed_out: exit_code.is_none(),
        })
    }

    /// Handles `command/exec/snapshot`: retained output and state.
    pub async fn snapshot(&self, params: SnapshotParams) -> Result<SnapshotResponse> {
        let session = self.session("command/exec/snapshot", &params.session_id)?;
        Ok(session.snapshot())
    }

    /// Stops every process of the connection: SIGTERM to each group, SIGKILL to whatever is
    /// left after the grace period, then waits until all are reaped. No new process starts
    /// afterwards.
    ///
    /// Cancel safe, but cancelling it leaves the SIGKILL step to the handler's drop.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<RunningProcess>> = {
            let mut state = lock(&self.inner.state);
            state.shutting_down = true;
            state.sessions.values().cloned().collect()
        };
        let alive: Vec<Arc<RunningProcess>> = sessions
            .into_iter()
            .filter(|session| session.group_may_be_alive())
            .collect();
        for session in &alive {
            session.signal_group(Signal::SIGTERM);
        }
        let all_exited = futures::future::join_all(alive.iter().map(|session| session.wait(None)));
        if tokio::time::timeout(self.inner.config.shutdown_grace, all_exited)
            .await
            .is_err()
        {
            tracing::info!("processes still running after the grace period; killing them");
        }
        self.inner.cancel.cancel();
        for session in &alive {
            if session.group_may_be_alive() {
                session.signal_group(Signal::SIGKILL);
            }
        }
        self.inner.tasks.close();
        if tokio::time::timeout(REAP_TIMEOUT, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some processes were not reaped within {REAP_TIMEOUT:?}");
        }
    }
}

/// Bookkeeping when a session's exit is known: it no longer counts against the limit, and
/// the oldest finished sessions are forgotten.
fn finished(inner: &Weak<Inner>, id: &ExecSessionId) {
    let Some(inner) = inner.upgrade() else {
        return;
    };
    let mut state = lock(&inner.state);
    state.running = state.running.saturating_sub(1);
    state.finished.push_back(id.clone());
    while state.finished.len() > FINISHED_SESSIONS_KEPT {
        let Some(old) = state.finished.pop_front() else {
            break;
        };
        // A session whose group may still have members stays, so shutdown can kill it.
        let lingering = state
            .sessions
            .get(&old)
            .is_some_and(|session| session.group_may_be_alive());
        if !lingering {
            state.sessions.remove(&old);
        }
    }
}

/// A path the server resolves must be absolute: relative to what would be ambiguous.
fn require_absolute(method: &str, path: &std::path::Path) -> Result<()> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(ExecServerError::InvalidParams(format!(
            "`{method}`: `path` must be absolute, got `{}`",
            path.display()
        )))
    }
}
