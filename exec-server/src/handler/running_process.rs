//! One process of a connection: its control handles, its state, and the supervisor task
//! that pumps its output and reports its exit.

use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use keel_protocol::exec_server::{ExecOutputStream, SnapshotResponse};
use keel_protocol::{Base64Bytes, ExecSessionId};
use nix::sys::signal::Signal;

use crate::owned_groups::OwnedProcessGroup;
use portable_pty::{MasterPty, PtySize};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::output::{OutputSource, spawn_pty_writer};
use super::retained::RetainedOutput;
use crate::buffers::BufferPool;
use crate::error::{ExecServerError, Result};
use crate::event::ExecServerEvent;

/// Chunks queued for a PTY's input. Full: `command/exec/write` fails with "stdin queue full"
/// instead of blocking the connection, because the child is not reading its input.
const STDIN_QUEUE_CHUNKS: usize = 256;

/// Where a process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The leader has not been reaped.
    Running,
    /// The leader was reaped; output is still being drained.
    Draining,
    /// All output was pumped; `exited` is (being) reported.
    Finished {
        /// The exit status reported to the client.
        exit_code: i32,
    },
}

/// Control handles of a PTY-backed process.
struct Terminal {
    master: Mutex<Option<Box<dyn MasterPty + Send>>>,
    stdin: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
}

/// Retained output of the process, per stream.
struct Retained {
    stdout: RetainedOutput,
    stderr: Option<RetainedOutput>,
}

/// One process started by a connection.
pub(crate) struct RunningProcess {
    id: ExecSessionId,
    /// Killed when the session is forgotten, and by the watchdog if the server dies first.
    group: OwnedProcessGroup,
    terminal: Option<Terminal>,
    phase: watch::Sender<Phase>,
    retained: Mutex<Retained>,
    /// Set when draining gave up on a pipe held open by a background grandchild: the process
    /// group may still have members, which connection shutdown must kill.
    group_lingers: AtomicBool,
    /// Woken when the process is to be killed: the supervising task makes sure it dies even
    /// if a process supervisor does not answer.
    kill_requested: tokio::sync::Notify,
}

/// How long a process supervisor asked to kill its tree may take before the server kills the
/// supervisor itself (whose death ends the command's PID namespace). Longer than the
/// supervisor's own clean-up limit, so that normally it finishes its work.
const SUPERVISOR_KILL_GRACE: Duration = Duration::from_secs(6);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How one output pump ended.
enum PumpEnd {
    /// End of file: every byte was delivered.
    Eof,
    /// Nothing arrived for the drain timeout after the leader exited.
    Abandoned,
    /// The connection is going away.
    Cancelled,
}

/// What the handler passes to a new session's supervisor.
pub(crate) struct SuperviseContext {
    pub(crate) events: mpsc::Sender<ExecServerEvent>,
    pub(crate) cancel: CancellationToken,
    pub(crate) drain_timeout: Duration,
    pub(crate) start: oneshot::Receiver<()>,
    pub(crate) on_finished: Box<dyn FnOnce(&ExecSessionId) + Send>,
    /// Lends the buffers output is read into.
    pub(crate) output_buffers: BufferPool,
}

impl RunningProcess {
    /// Wraps a spawned process; returns the session and the future that supervises it.
    pub(crate) fn start(
        id: ExecSessionId,
        spawned: super::spawn::Spawned,
        retained_bytes: usize,
        context: SuperviseContext,
    ) -> (
        std::sync::Arc<Self>,
        impl Future<Output = ()> + Send + 'static,
    ) {
        let super::spawn::Spawned {
            child,
            pid,
            supervised,
            io,
        } = spawned;
        let (terminal, sources, retained) = match io {
            super::spawn::SpawnedIo::Pipes { stdout, stderr } => (
                None,
                vec![
                    (
                        ExecOutputStream::Stdout,
                        OutputSource::pipe(Box::new(stdout), context.output_buffers.clone()),
                    ),
                    (
                        ExecOutputStream::Stderr,
                        OutputSource::pipe(Box::new(stderr), context.output_buffers.clone()),
                    ),
                ],
                Retained {
                    stdout: RetainedOutput::new(retained_bytes / 2),
                    stderr: Some(RetainedOutput::new(retained_bytes - retained_bytes / 2)),
                },
            ),
            super::spawn::SpawnedIo::Pty {
                master,
                reader,
                writer,
            } => {
                let (stdin_tx, stdin_rx) = mpsc::channel(STDIN_QUEUE_CHUNKS);
                spawn_pty_writer(&id, writer, stdin_rx);
                let output = OutputSource::terminal(&id, reader, context.output_buffers.clone());
                (
                    Some(Terminal {
                        master: Mutex::new(Some(master)),
                        stdin: Mutex::new(Some(stdin_tx)),
                    }),
                    vec![(ExecOutputStream::Stdout, output)],
                    Retained {
                        stdout: RetainedOutput::new(retained_bytes),
                        stderr: None,
                    },
                )
            }
        };
        let session = std::sync::Arc::new(Self {
            id,
            group: if supervised {
                OwnedProcessGroup::supervised(pid)
            } else {
                OwnedProcessGroup::register(pid)
            },
            terminal,
            phase: watch::Sender::new(Phase::Running),
            retained: Mutex::new(retained),
            group_lingers: AtomicBool::new(false),
            kill_requested: tokio::sync::Notify::new(),
        });
        let supervisor = std::sync::Arc::clone(&session).supervise(child, sources, context);
        (session, supervisor)
    }

    /// The current phase.
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// `true` if the process group may still have live members.
    pub(crate) fn group_may_be_alive(&self) -> bool {
        !matches!(self.phase(), Phase::Finished { .. })
            || self.group_lingers.load(Ordering::Relaxed)
    }

    /// Sends `signal` to the whole process group; a group that is already gone is not an error.
    pub(crate) fn signal_group(&self, signal: Signal) {
        self.group.signal(signal);
        if signal == Signal::SIGKILL {
            // Stored as a permit when the supervising task is not waiting yet.
            self.kill_requested.notify_one();
        }
    }

    /// Waits for a process that was told to die; kills it outright if it is still there after
    /// [`SUPERVISOR_KILL_GRACE`] (a supervisor that was stopped, or is stuck). Safe against
    /// pid reuse: the child is not reaped before this kill.
    async fn wait_or_kill(&self, child: &mut Child) -> std::io::Result<std::process::ExitStatus> {
        match tokio::time::timeout(SUPERVISOR_KILL_GRACE, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                tracing::warn!(session = %self.id, "the process did not end when told to; killing it");
                if let Err(err) = child.start_kill() {
                    tracing::warn!(session = %self.id, %err, "killing the process failed");
                }
                child.wait().await
            }
        }
    }

    /// Queues bytes for a PTY's input.
    pub(crate) fn write(&self, chunk: Vec<u8>) -> Result<()> {
        let Some(terminal) = &self.terminal else {
            return Err(ExecServerError::StdinClosed(self.id.clone()));
        };
        let stdin = lock(&terminal.stdin);
        let Some(sender) = stdin.as_ref() else {
            return Err(ExecServerError::StdinClosed(self.id.clone()));
        };
        sender.try_send(chunk).map_err(|err| match err {
            mpsc::error::TrySendError::Full(_) => ExecServerError::StdinFull(self.id.clone()),
            mpsc::error::TrySendError::Closed(_) => ExecServerError::StdinClosed(self.id.clone()),
        })
    }

    /// Closes a PTY's input (the writer sends end-of-file); pipe-backed stdin is always closed.
    pub(crate) fn close_stdin(&self) {
        if let Some(terminal) = &self.terminal {
            lock(&terminal.stdin).take();
        }
    }

    /// Changes a PTY's window size; the kernel sends SIGWINCH to its foreground group.
    pub(crate) fn resize(&self, rows: u16, cols: u16) -> Result<()> {
        let Some(terminal) = &self.terminal else {
            return Err(ExecServerError::NotATerminal(self.id.clone()));
        };
        let master = lock(&terminal.master);
        let Some(master) = master.as_ref() else {
            return Err(ExecServerError::SessionExited(self.id.clone()));
        };
        master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|err| ExecServerError::Pty {
                context: "resizing the terminal",
                message: format!("{err:#}"),
            })
    }

    /// Waits until the exit is known, up to `timeout`; `None` when it elapsed.
    ///
    /// Cancel safe.
    pub(crate) async fn wait(&self, timeout: Option<Duration>) -> Option<i32> {
        let mut phase = self.phase.subscribe();
        let finished = async move {
            match phase
                .wait_for(|phase| matches!(phase, Phase::Finished { .. }))
                .await
            {
                Ok(phase) => match *phase {
                    Phase::Finished { exit_code } => Some(exit_code),
                    Phase::Running | Phase::Draining => None,
                },
                Err(_) => None,
            }
        };
        match timeout {
            Some(timeout) => tokio::time::timeout(timeout, finished).await.ok().flatten(),
            None => finished.await,
        }
    }

    /// The retained output and state.
    pub(crate) fn snapshot(&self) -> SnapshotResponse {
        let retained = lock(&self.retained);
        let exit_code = match self.phase() {
            Phase::Finished { exit_code } => Some(exit_code),
            Phase::Running | Phase::Draining => None,
        };
        let stdout = Some(Base64Bytes(retained.stdout.contents()));
        let truncated = retained.stdout.truncated()
            || retained
                .stderr
                .as_ref()
                .is_some_and(RetainedOutput::truncated);
        let (stdout, terminal) = if self.terminal.is_some() {
            (None, stdout)
        } else {
            (stdout, None)
        };
        SnapshotResponse {
            stdout,
            stderr: retained
                .stderr
                .as_ref()
                .map(|stderr| Base64Bytes(stderr.contents())),
            terminal,
            truncated,
            exit_code,
            running: matches!(self.phase(), Phase::Running),
        }
    }

    fn retain(&self, stream: ExecOutputStream, chunk: &Bytes) {
        let mut retained = lock(&self.retained);
        match (stream, retained.stderr.as_mut()) {
            (ExecOutputStream::Stderr, Some(stderr)) => stderr.push(chunk),
            (ExecOutputStream::Stdout | ExecOutputStream::Stderr, _) => {
                retained.stdout.push(chunk);
            }
        }
    }

    /// Drops the input and the terminal once the process is gone.
    fn release_io(&self) {
        if let Some(terminal) = &self.terminal {
            lock(&terminal.stdin).take();
            lock(&terminal.master).take();
        }
    }

    /// Pumps output, reaps the leader, drains the pipes, then reports the exit. Output events
    /// are all sent before `Exited` on the same channel, so the client sees them first.
    async fn supervise(
        self: std::sync::Arc<Self>,
        mut child: Child,
        sources: Vec<(ExecOutputStream, OutputSource)>,
        context: SuperviseContext,
    ) {
        let SuperviseContext {
            events,
            cancel,
            drain_timeout,
            start,
            on_finished,
            output_buffers: _,
        } = context;
        // The processor holds the start until the `command/exec` response is queued, so a
        // client never sees output for a session id it has not been told about.
        if start.await.is_err() {
            tracing::trace!(session = %self.id, "start gate dropped");
        }
        let leader_exited = CancellationToken::new();
        let mut pumps = JoinSet::new();
        for (stream, source) in sources {
            pumps.spawn(std::sync::Arc::clone(&self).pump(
                stream,
                source,
                events.clone(),
                cancel.clone(),
                leader_exited.clone(),
                drain_timeout,
            ));
        }
        let status = tokio::select! {
            status = child.wait() => status,
            () = cancel.cancelled() => {
                self.signal_group(Signal::SIGKILL);
                self.wait_or_kill(&mut child).await
            }
            () = self.kill_requested.notified() => self.wait_or_kill(&mut child).await,
        };
        self.group.leader_reaped();
        let exit_code = match status {
            Ok(status) => status
                .code()
                .or_else(|| status.signal().map(|signal| 128 + signal))
                .unwrap_or(-1),
            Err(err) => {
                tracing::warn!(session = %self.id, %err, "waiting for the process failed");
                -1
            }
        };
        self.phase.send_replace(Phase::Draining);
        leader_exited.cancel();
        while let Some(end) = pumps.join_next().await {
            match end {
                Ok(PumpEnd::Eof) => {}
                Ok(PumpEnd::Abandoned | PumpEnd::Cancelled) => {
                    self.group_lingers.store(true, Ordering::Relaxed);
                }
                Err(err) => {
                    tracing::warn!(session = %self.id, %err, "output pump failed");
                    self.group_lingers.store(true, Ordering::Relaxed);
                }
            }
        }
        self.release_io();
        self.phase.send_replace(Phase::Finished { exit_code });
        on_finished(&self.id);
        tracing::debug!(session = %self.id, exit_code, "process finished");
        let exited = ExecServerEvent::Exited {
            session_id: self.id.clone(),
            exit_code,
        };
        tokio::select! {
            sent = events.send(exited) => if sent.is_err() {
                tracing::debug!(session = %self.id, "exit not reported: connection gone");
            },
            () = cancel.cancelled() => {
                tracing::debug!(session = %self.id, "exit not reported: connection closing");
            }
        }
    }

    /// Forwards one stream's chunks as events. Awaiting the bounded event channel is the
    /// backpressure: while it is full this pump does not read, so the child blocks writing.
    async fn pump(
        self: std::sync::Arc<Self>,
        stream: ExecOutputStream,
        mut source: OutputSource,
        events: mpsc::Sender<ExecServerEvent>,
        cancel: CancellationToken,
        leader_exited: CancellationToken,
        drain_timeout: Duration,
    ) -> PumpEnd {
        loop {
            let draining = leader_exited.is_cancelled();
            let chunk = tokio::select! {
                biased;
                () = cancel.cancelled() => return PumpEnd::Cancelled,
                chunk = source.next_chunk() => chunk,
                () = leader_exited.cancelled(), if !draining => continue,
                () = tokio::time::sleep(drain_timeout), if draining => {
                    tracing::debug!(session = %self.id, ?stream, "output still open after exit; giving up");
                    return PumpEnd::Abandoned;
                }
            };
            let chunk = match chunk {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return PumpEnd::Eof,
                Err(err) => {
                    tracing::debug!(session = %self.id, ?stream, %err, "output read failed");
                    return PumpEnd::Eof;
                }
            };
            self.retain(stream, &chunk);
            let event = ExecServerEvent::Output {
                session_id: self.id.clone(),
                stream,
                chunk,
            };
            tokio::select! {
                sent = events.send(event) => if sent.is_err() {
                    return PumpEnd::Cancelled;
                },
                () = cancel.cancelled() => return PumpEnd::Cancelled,
            }
        }
    }
}
