//! Running one command for the `shell` tool: spawn in its own process group, stream output as
//! events, capture a bounded copy, and kill the whole group on timeout or interrupt.

mod output_buffer;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use keel_exec_server::OwnedProcessGroup;
use keel_protocol::exec_server::ExecOutputStream;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

pub(crate) use output_buffer::{HeadTailBuffer, truncate_for_model};

/// Bytes of each stream kept for the `exec_command_end` event and the model.
const CAPTURE_BYTES: usize = 1024 * 1024;
/// Output deltas sent per command; beyond this, output is still captured but not streamed.
const MAX_DELTA_EVENTS: usize = 10_000;
/// After the command itself exits, how long its output may stay silent before the rest is
/// given up: a background child (`server &`) can hold the pipes open for as long as it runs.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// A command ready to run.
#[derive(Debug, Clone)]
pub(crate) struct ExecRequest {
    pub argv: Vec<String>,
    /// The `argv[0]` the program sees, when it differs from `argv[0]` (the sandbox helper).
    pub arg0: Option<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
}

/// How a command ended.
#[derive(Debug, Clone)]
pub(crate) struct ExecOutcome {
    pub exit_code: i32,
    pub stdout: String,
    pub stderr: String,
    pub aggregated: String,
    pub duration: Duration,
    pub timed_out: bool,
}

/// What ended the run early, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecStop {
    Interrupted,
}

/// Runs a command, handing every output chunk to `on_output` (at most [`MAX_DELTA_EVENTS`]
/// times). Returns `Err(ExecStop::Interrupted)` when `cancel` fires; the process group is
/// killed either way before this returns.
pub(crate) async fn run_command<F, Fut>(
    request: &ExecRequest,
    cancel: &CancellationToken,
    mut on_output: F,
) -> std::io::Result<Result<ExecOutcome, ExecStop>>
where
    F: FnMut(ExecOutputStream, Vec<u8>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some((program, args)) = request.argv.split_first() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "empty command",
        ));
    };
    let started = Instant::now();
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(&request.cwd)
        .env_clear()
        .envs(&request.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(arg0) = &request.arg0 {
        command.arg0(arg0);
    }
    let mut child = command.spawn()?;
    // Killed on every way out of this function (the future may also just be dropped), and by
    // the watchdog should the whole program die first.
    let group = child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .map(OwnedProcessGroup::register);
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other("child pipes missing"));
    };

    let mut out_buf = HeadTailBuffer::new(CAPTURE_BYTES);
    let mut err_buf = HeadTailBuffer::new(CAPTURE_BYTES);
    let mut all_buf = HeadTailBuffer::new(CAPTURE_BYTES);
    let mut deltas = 0usize;
    let mut out_chunk = vec![0u8; 8192];
    let mut err_chunk = vec![0u8; 8192];
    let (mut out_open, mut err_open) = (true, true);
    let deadline = tokio::time::sleep(request.timeout);
    tokio::pin!(deadline);
    let mut timed_out = false;

    // Set once the command itself has exited; from then on only output that keeps coming
    // is waited for.
    let mut exited: Option<std::process::ExitStatus> = None;
    let drain = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(drain);
    while out_open || err_open {
        let (stream, read) = tokio::select! {
            () = cancel.cancelled() => {
                kill_group(group.as_ref());
                let _reaped = child.wait().await;
                return Ok(Err(ExecStop::Interrupted));
            }
            () = &mut deadline, if !timed_out => {
                timed_out = true;
                kill_group(group.as_ref());
                continue;
            }
            status = child.wait(), if exited.is_none() => {
                exited = Some(status?);
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
                continue;
            }
            // The command is gone but something it started still holds the pipes.
            () = &mut drain, if exited.is_some() => break,
            read = stdout.read(&mut out_chunk), if out_open => (ExecOutputStream::Stdout, read),
            read = stderr.read(&mut err_chunk), if err_open => (ExecOutputStream::Stderr, read),
        };
        if exited.is_some() {
            drain
                .as_mut()
                .reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
        }
        let n = read?;
        let bytes = match stream {
            ExecOutputStream::Stdout if n == 0 => {
                out_open = false;
                continue;
            }
            ExecOutputStream::Stderr if n == 0 => {
                err_open = false;
                continue;
            }
            ExecOutputStream::Stdout => {
                out_buf.push(&out_chunk[..n]);
                &out_chunk[..n]
            }
            ExecOutputStream::Stderr => {
                err_buf.push(&err_chunk[..n]);
                &err_chunk[..n]
            }
        };
        all_buf.push(bytes);
        if deltas < MAX_DELTA_EVENTS {
            deltas += 1;
            on_output(stream, bytes.to_vec()).await;
        }
    }

    let status = match exited {
        Some(status) => status,
        None => tokio::select! {
            () = cancel.cancelled() => {
                kill_group(group.as_ref());
                let _reaped = child.wait().await;
                return Ok(Err(ExecStop::Interrupted));
            }
            status = child.wait() => status?,
        },
    };
    // The direct child is gone; make sure nothing it left in its group lingers.
    kill_group(group.as_ref());
    let exit_code = if timed_out { 124 } else { exit_code_of(status) };
    Ok(Ok(ExecOutcome {
        exit_code,
        stdout: out_buf.to_lossy_string(),
        stderr: err_buf.to_lossy_string(),
        aggregated: all_buf.to_lossy_string(),
        duration: started.elapsed(),
        timed_out,
    }))
}

/// Shell-style exit code: the status, or `128 + signal` when killed by a signal.
fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(-1)
}

fn kill_group(group: Option<&OwnedProcessGroup>) {
    if let Some(group) = group {
        group.signal(nix::sys::signal::Signal::SIGKILL);
    }
}
