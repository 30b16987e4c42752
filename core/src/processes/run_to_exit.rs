//! Running one command to its end (the `shell` tool): stream its output, capture a bounded
//! copy, and kill its group on timeout or interrupt.

use std::time::Duration;

use keel_protocol::exec_server::ExecOutputStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::output_buffer::HeadTailBuffer;
use super::{ProcessError, ProcessLayer, ProcessSpec};

/// Bytes of each stream kept for the `exec_command_end` event and the model.
const CAPTURE_BYTES: usize = 1024 * 1024;
/// Output deltas sent per command; beyond this, output is still captured but not streamed.
const MAX_DELTA_EVENTS: usize = 10_000;
/// Exit code reported for a command killed at its timeout, as `timeout(1)` does.
const TIMED_OUT_EXIT_CODE: i32 = 124;

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

/// Runs a command to its exit, handing every output chunk to `on_output` (at most
/// [`MAX_DELTA_EVENTS`] times). Returns `Ok(Err(ExecStop::Interrupted))` when `cancel`
/// fires; the process group is killed on every early way out.
pub(crate) async fn run_to_exit<F, Fut>(
    layer: &ProcessLayer,
    spec: ProcessSpec,
    timeout: Duration,
    cancel: &CancellationToken,
    mut on_output: F,
) -> Result<Result<ExecOutcome, ExecStop>, ProcessError>
where
    F: FnMut(ExecOutputStream, Vec<u8>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    let mut process = layer.spawn(spec).await?;
    let deadline = started + timeout;
    let mut timed_out = false;
    let mut stdout = HeadTailBuffer::new(CAPTURE_BYTES);
    let mut stderr = HeadTailBuffer::new(CAPTURE_BYTES);
    let mut aggregated = HeadTailBuffer::new(CAPTURE_BYTES);
    let mut deltas = 0usize;
    let exit_code = loop {
        let collected = tokio::select! {
            () = cancel.cancelled() => {
                process.kill().await;
                return Ok(Err(ExecStop::Interrupted));
            }
            collected = process.next((!timed_out).then_some(deadline)) => collected,
        };
        let nothing = collected.chunks.is_empty() && collected.dropped_bytes == 0;
        if nothing && !collected.is_final() {
            // The deadline passed; the exit that follows the kill ends the loop.
            timed_out = true;
            process.kill().await;
            continue;
        }
        for (stream, chunk) in collected.chunks {
            match stream {
                ExecOutputStream::Stdout => stdout.push(&chunk),
                ExecOutputStream::Stderr => stderr.push(&chunk),
            }
            aggregated.push(&chunk);
            if deltas < MAX_DELTA_EVENTS {
                deltas += 1;
                on_output(stream, chunk.to_vec()).await;
            }
        }
        if collected.dropped_bytes > 0 {
            aggregated.push(b"\n[... output lost: the reader fell behind ...]\n");
        }
        if let Some(exit_code) = collected.exit_code {
            break exit_code;
        }
        if collected.disconnected {
            let note = b"\n[the connection to the exec-server was lost before the command ended: \
                it started there and may have finished, partly run or still be running; \
                its exit is unknown and it is not run again]\n";
            stderr.push(note);
            aggregated.push(note);
            break -1;
        }
    };
    Ok(Ok(ExecOutcome {
        exit_code: if timed_out {
            TIMED_OUT_EXIT_CODE
        } else {
            exit_code
        },
        stdout: stdout.to_lossy_string(),
        stderr: stderr.to_lossy_string(),
        aggregated: aggregated.to_lossy_string(),
        duration: started.elapsed(),
        timed_out,
    }))
}
