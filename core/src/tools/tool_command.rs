//! Commands an embedder's tool runs: the same path as the model's `shell` commands (asked
//! about or refused as the approval policy says, confined by the turn's sandbox, announced
//! with `exec_command_*` events, killed on interrupt with everything they started), so a tool
//! that runs programs needs no sandbox of its own.

use std::path::PathBuf;
use std::time::Duration;

use keel_protocol::CallId;

use super::command_runtime::{ExecCall, Placement};
use super::{ToolContext, ToolError};
use crate::processes::ExecOutcome;
use crate::sandbox::setup_failure;
use crate::turn_context::TurnStop;

/// How a command a tool ran ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandOutput {
    /// Its exit code (`-1` when it could not start or was killed at its timeout).
    pub exit_code: i32,
    /// What it wrote to stdout.
    pub stdout: String,
    /// What it wrote to stderr.
    pub stderr: String,
    /// Both streams as they interleaved.
    pub output: String,
    /// Whether it was killed at its timeout.
    pub timed_out: bool,
    /// How long it ran.
    pub duration: Duration,
}

impl From<ExecOutcome> for CommandOutput {
    fn from(outcome: ExecOutcome) -> Self {
        Self {
            exit_code: outcome.exit_code,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            output: outcome.aggregated,
            timed_out: outcome.timed_out,
            duration: outcome.duration,
        }
    }
}

impl ToolContext {
    /// Runs `argv` in the call's working directory as the model's commands run: asked about
    /// or refused as the approval policy says, confined by the turn's sandbox, reported to the
    /// client, killed after `timeout` or on interrupt. A command that is not allowed to run is
    /// [`ToolError::Respond`] with the reason (return it with `?` to tell the model).
    pub async fn run_command(
        &self,
        argv: Vec<String>,
        timeout: Duration,
    ) -> Result<CommandOutput, ToolError> {
        if argv.is_empty() {
            return Err(ToolError::Respond(
                "the command to run is empty".to_string(),
            ));
        }
        // Its own id: approvals and events of the command must not be taken for the call's.
        let call_id = CallId::new(format!(
            "{}/command-{}",
            self.call_id().as_str(),
            uuid::Uuid::new_v4().simple()
        ));
        let call = ExecCall {
            call_id,
            argv,
            cwd: PathBuf::from(self.cwd()),
            timeout,
            process_id: None,
            source: keel_protocol::ExecCommandSource::Agent,
        };
        match run_for_tool(self, &call).await? {
            Ok(outcome) => Ok(outcome.into()),
            Err(refusal) => Err(ToolError::Respond(refusal)),
        }
    }
}

/// Authorizes and runs `call` for an embedder's tool: the outcome, or `Err` with why it
/// did not run.
async fn run_for_tool(
    ctx: &ToolContext,
    call: &ExecCall,
) -> Result<Result<ExecOutcome, String>, TurnStop> {
    let sandbox = match super::command_runtime::authorize(ctx, call, false, None).await? {
        Ok(Placement::Sandboxed(sandbox)) => Some(sandbox),
        Ok(Placement::Unsandboxed) => None,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let outcome = super::command_runtime::execute(ctx, call, sandbox.as_ref()).await?;
    if sandbox.is_some()
        && let Some(reason) = setup_failure(outcome.exit_code, &outcome.stderr)
    {
        return Ok(
            match super::command_runtime::allow_without_sandbox(ctx, call, &reason).await? {
                Ok(()) => Ok(super::command_runtime::execute(ctx, call, None).await?),
                Err(refusal) => Err(refusal),
            },
        );
    }
    Ok(Ok(outcome))
}
