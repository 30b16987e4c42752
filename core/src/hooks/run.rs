//! Running one command hook: `bash -c COMMAND` in the session's working directory with the
//! event's JSON on stdin, bounded by its timeout, under the process supervisor when there is
//! one (so nothing it starts outlives it), else in a process group of its own that is killed
//! when it ends.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::CommandHandler;

/// Most output read from a hook, per stream.
const MAX_OUTPUT_BYTES: u64 = 1024 * 1024;

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProcessEnd {
    /// It exited with this code.
    Exited(i32),
    /// It was killed at its timeout.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}

/// What a hook process printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcessRun {
    pub end: ProcessEnd,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

/// Runs `handler` with `input` on stdin in `cwd`.
pub(crate) async fn run_command(
    handler: &CommandHandler,
    input: &serde_json::Value,
    cwd: &Path,
) -> ProcessRun {
    let started = Instant::now();
    let args = vec!["-c".to_string(), handler.command.clone()];
    let bash = Path::new("/bin/bash");
    let supervisor = keel_exec_server::supervisor::default_process_supervisor();
    let supervised = supervisor.is_some();
    let mut command = match &supervisor {
        Some(supervisor) => {
            keel_exec_server::supervisor::supervised_command(supervisor, bash, &args)
        }
        None => {
            let mut command = tokio::process::Command::new(bash);
            command.args(&args);
            command
        }
    };
    command
        .current_dir(cwd)
        .envs(handler.env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return ProcessRun {
                end: ProcessEnd::NotStarted(err.to_string()),
                stdout: String::new(),
                stderr: String::new(),
                duration: started.elapsed(),
            };
        }
    };
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
    // Ends the hook and everything it started: through the supervisor, or the whole group.
    let stop = move || {
        let Some(pid) = pid else { return };
        let _ = if supervised {
            kill(Pid::from_raw(pid), Signal::SIGUSR1)
        } else {
            killpg(Pid::from_raw(pid), Signal::SIGKILL)
        };
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let text = input.to_string();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A hook that does not read its input is not an error.
            let _ = stdin.write_all(text.as_bytes()).await;
        }
    };
    let timeout = Duration::from_secs(handler.timeout_secs);
    let finished = tokio::time::timeout(timeout, async {
        let ((), stdout, stderr, status) =
            tokio::join!(feed, read_capped(stdout), read_capped(stderr), child.wait());
        (stdout, stderr, status)
    })
    .await;
    let run = match finished {
        Ok((stdout, stderr, status)) => ProcessRun {
            end: match status {
                Ok(status) => ProcessEnd::Exited(status.code().unwrap_or_else(|| {
                    128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
                })),
                Err(err) => ProcessEnd::NotStarted(err.to_string()),
            },
            stdout,
            stderr,
            duration: started.elapsed(),
        },
        Err(_) => {
            stop();
            let _ = child.wait().await;
            ProcessRun {
                end: ProcessEnd::TimedOut(timeout),
                stdout: String::new(),
                stderr: String::new(),
                duration: started.elapsed(),
            }
        }
    };
    if !supervised {
        // Whatever the hook left in its group goes with it.
        stop();
    }
    run
}

/// Up to [`MAX_OUTPUT_BYTES`] of a hook's output stream, as text.
async fn read_capped(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let mut out = Vec::new();
    if let Some(stream) = stream {
        let _ = stream.take(MAX_OUTPUT_BYTES).read_to_end(&mut out).await;
    }
    String::from_utf8_lossy(&out).into_owned()
}
