//! A one-shot command in the client's terminal (an editor's): started there, stopped at its
//! timeout or when the turn is cancelled exactly as Keel's own are, its output read back for
//! the model once it ends.

use std::time::Duration;

use keel_protocol::ConversationId;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{ExecOutcome, ExecStop, ProcessError};
use crate::{ClientCommand, ClientTerminal, ClientTerminals, TerminalExit};

/// Exit code reported for a command killed at its timeout, as `timeout(1)` does.
const TIMED_OUT_EXIT_CODE: i32 = 124;
/// How long a client gets to report the end of a command it was told to kill.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// Runs `command` in a new terminal of the client to its end. Returns
/// `Ok(Err(ExecStop::Interrupted))` when `cancel` fires; the command is killed on every early
/// way out, and the terminal is released in every case.
pub(crate) async fn run_in_client_terminal(
    terminals: &dyn ClientTerminals,
    conversation: ConversationId,
    command: ClientCommand,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Result<ExecOutcome, ExecStop>, ProcessError> {
    let started = Instant::now();
    let terminal = terminals.start(conversation, command).await?;
    let outcome = drive(terminal.as_ref(), started, timeout, cancel).await;
    if let Err(err) = terminal.release().await {
        tracing::debug!("the editor did not release a terminal: {err}");
    }
    outcome
}

async fn drive(
    terminal: &dyn ClientTerminal,
    started: Instant,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Result<ExecOutcome, ExecStop>, ProcessError> {
    let mut timed_out = false;
    let exit = tokio::select! {
        () = cancel.cancelled() => {
            stop(terminal).await;
            return Ok(Err(ExecStop::Interrupted));
        }
        exit = tokio::time::timeout(timeout, terminal.wait_for_exit()) => match exit {
            Ok(exit) => exit?,
            Err(_) => {
                timed_out = true;
                stop(terminal).await
            }
        },
    };
    let shown = terminal.output().await?;
    let mut output = String::new();
    if shown.truncated {
        output.push_str("[... the start of the output was cut ...]\n");
    }
    output.push_str(&shown.output);
    let exit_code = match (timed_out, &exit) {
        (true, _) => TIMED_OUT_EXIT_CODE,
        (
            false,
            TerminalExit {
                exit_code: Some(code),
                ..
            },
        ) => *code,
        (false, TerminalExit { signal, .. }) => {
            output.push_str(&format!(
                "\n[ended by signal {}]\n",
                signal.as_deref().unwrap_or("unknown")
            ));
            -1
        }
    };
    Ok(Ok(ExecOutcome {
        exit_code,
        stdout: output.clone(),
        stderr: String::new(),
        aggregated: output,
        duration: started.elapsed(),
        timed_out,
    }))
}

/// Kills the command and waits (briefly) for the client to see it end.
async fn stop(terminal: &dyn ClientTerminal) -> TerminalExit {
    if let Err(err) = terminal.kill().await {
        tracing::warn!("the editor did not kill a command: {err}");
    }
    match tokio::time::timeout(KILL_GRACE, terminal.wait_for_exit()).await {
        Ok(Ok(exit)) => exit,
        Ok(Err(err)) => {
            tracing::warn!("the editor did not report a killed command's end: {err}");
            TerminalExit::default()
        }
        Err(_) => {
            tracing::warn!(
                "the editor did not report a killed command's end within {} s",
                KILL_GRACE.as_secs()
            );
            TerminalExit::default()
        }
    }
}
