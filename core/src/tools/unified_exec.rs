//! The `exec_command` and `write_stdin` tools: start a process (optionally on a terminal),
//! return what it printed within a time budget, and keep talking to it in later calls.
//!
//! Approval and the sandbox apply once, when `exec_command` starts the process;
//! `write_stdin` only reaches a process that was already allowed to run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use keel_protocol::{
    Base64Bytes, CallId, EventMsg, ExecCommandEndEvent, ExecCommandOutputDeltaEvent,
    ExecCommandSource, ExecCommandStatus, TerminalInteractionEvent,
};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::time::Instant;

use super::ToolContext;
use super::ToolHost;
use super::command_runtime::{ExecCall, Placement};
use crate::processes::{HeadTailBuffer, ProcessSpec};
use crate::sandbox::LINUX_SANDBOX_ARG0;
use crate::turn_context::{TurnIds, TurnStop};
use crate::unified_exec::{
    AGGREGATED_OUTPUT_BYTES, BackgroundTerminal, ChunkReport, ProcessStatus, SharedProcess,
    UnifiedProcess, render_chunk,
};

/// `exec_command`'s wait for output when the model gives none.
const DEFAULT_EXEC_YIELD_MS: u64 = 10_000;
/// `write_stdin`'s wait after writing when the model gives none.
const DEFAULT_WRITE_YIELD_MS: u64 = 250;
/// Bounds on any wait: long enough to see a prompt, short enough to keep the model informed.
const MIN_YIELD_MS: u64 = 250;
const MAX_YIELD_MS: u64 = 30_000;
/// A poll (empty `chars`) waits at least this long: polling faster only costs requests, and
/// the call returns as soon as the process exits anyway.
const MIN_POLL_YIELD_MS: u64 = 5_000;
const MAX_POLL_YIELD_MS: u64 = 300_000;
/// Output tokens returned per call when the model gives no cap.
const DEFAULT_MAX_OUTPUT_TOKENS: usize = 10_000;
/// Output kept per call before the token cap cuts it.
const CALL_OUTPUT_BYTES: usize = 1024 * 1024;
/// How long a killed process may take to report its exit before its end event is sent.
const KILL_REPORT_TIMEOUT: Duration = Duration::from_secs(2);

/// The arguments of `exec_command` (its schema is written out in the tool, in Codex's shape).
#[derive(Deserialize, JsonSchema)]
pub(crate) struct ExecCommandArgs {
    cmd: String,
    #[serde(default)]
    workdir: Option<PathBuf>,
    #[serde(default)]
    shell: Option<String>,
    #[serde(default)]
    login: Option<bool>,
    #[serde(default)]
    tty: Option<bool>,
    #[serde(default)]
    yield_time_ms: Option<f64>,
    #[serde(default)]
    max_output_tokens: Option<f64>,
    #[serde(default)]
    sandbox_permissions: Option<String>,
    #[serde(default)]
    justification: Option<String>,
    /// A command prefix the model suggests approving from now on; Keel asks about the
    /// command itself and does not store rules yet.
    #[serde(default)]
    #[expect(dead_code, reason = "accepted for compatibility; no rule store yet")]
    prefix_rule: Option<Vec<String>>,
}

/// The arguments of `write_stdin` (its schema is written out in the tool, in Codex's shape).
#[derive(Deserialize, JsonSchema)]
pub(crate) struct WriteStdinArgs {
    session_id: f64,
    #[serde(default)]
    chars: String,
    #[serde(default)]
    yield_time_ms: Option<f64>,
    #[serde(default)]
    max_output_tokens: Option<f64>,
}

/// A model-given millisecond count, clamped to `[min, max]`.
fn clamp_ms(value: Option<f64>, default: u64, min: u64, max: u64) -> Duration {
    let ms = value
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(default, |ms| ms as u64);
    Duration::from_millis(ms.clamp(min, max))
}

/// The model's `max_output_tokens`, never above the configured tool output budget.
fn max_tokens(value: Option<f64>, budget: usize) -> usize {
    value
        .filter(|tokens| tokens.is_finite() && *tokens >= 1.0)
        .map_or(DEFAULT_MAX_OUTPUT_TOKENS, |tokens| tokens as usize)
        .min(budget)
}

/// The shell `exec_command` runs `cmd` with when the model names none.
fn default_shell() -> String {
    if std::path::Path::new("/bin/bash").is_file() {
        "/bin/bash".to_string()
    } else {
        "/bin/sh".to_string()
    }
}

/// What one wait on a process saw.
struct Polled {
    output: String,
    exit_code: Option<i32>,
    notes: Vec<String>,
}

/// Runs an `exec_command` call and returns the text for the model.
pub(super) async fn exec_command(
    ctx: &ToolContext,
    call_id: &str,
    args: ExecCommandArgs,
) -> Result<String, TurnStop> {
    let call_started = Instant::now();
    if args.cmd.trim().is_empty() {
        return Ok("exec_command: `cmd` must not be empty".to_string());
    }
    let shell = args.shell.clone().unwrap_or_else(default_shell);
    let flag = if args.login.unwrap_or(true) {
        "-lc"
    } else {
        "-c"
    };
    let argv = vec![shell, flag.to_string(), args.cmd.clone()];
    let cwd = super::command_runtime::workdir(ctx, args.workdir.as_deref());
    if let Some(output) =
        super::command_runtime::patch_in_command(ctx, call_id, &argv, &cwd).await?
    {
        return Ok(output);
    }
    let unified = ctx.host.unified_exec();
    // Reserved before authorization, so an approval request names the session it would
    // start (ids are never reused; a declined call just skips one).
    let id = unified.next_id();
    let call = ExecCall {
        call_id: CallId::new(call_id),
        argv,
        cwd,
        timeout: Duration::ZERO,
        process_id: Some(id),
        source: keel_protocol::ExecCommandSource::Agent,
    };
    let escalated = args.sandbox_permissions.as_deref() == Some("require_escalated");
    let placement = match super::command_runtime::authorize(
        ctx,
        &call,
        escalated,
        args.justification.as_deref(),
    )
    .await?
    {
        Ok(placement) => placement,
        Err(refusal) => return Ok(refusal),
    };
    let launch = super::command_runtime::launch_argv(ctx, &call.argv, &call.cwd).await?;
    let (argv, arg0) = match &placement {
        Placement::Sandboxed(sandbox) => {
            (sandbox.wrap(&launch), Some(LINUX_SANDBOX_ARG0.to_string()))
        }
        Placement::Unsandboxed => (launch, None),
    };
    let parsed_cmd = super::command_runtime::announce_begin(
        ctx,
        &call,
        ExecCommandSource::UnifiedExecStartup,
        Some(id.to_string()),
    )
    .await;
    let tty = args.tty.unwrap_or(false);
    let spec = ProcessSpec {
        argv,
        arg0,
        cwd: call.cwd.clone(),
        env: ctx.turn.shell_env.clone(),
        tty,
        traceparent: ctx.trace.traceparent(),
    };
    let started = Instant::now();
    let handle = match ctx.host.processes().spawn(spec).await {
        Ok(handle) => handle,
        Err(err) => {
            let message = err.start_failure(&args.cmd);
            let process = UnifiedProcessInfo {
                call_id: &call.call_id,
                command: &call.argv,
                cwd: &call.cwd,
                parsed_cmd: &parsed_cmd,
                id,
                started,
            };
            send_end(
                ctx.host.as_ref(),
                &ctx.ids,
                &process,
                -1,
                &message,
                &message,
            )
            .await;
            return Ok(format!("exec_command failed: {message}"));
        }
    };
    let summary = BackgroundTerminal {
        process_id: id.to_string(),
        item_id: call.call_id.to_string(),
        command: shlex::try_join(call.argv.iter().map(String::as_str))
            .unwrap_or_else(|_| call.argv.join(" ")),
        cwd: call.cwd.clone(),
    };
    let mut process = UnifiedProcess {
        handle,
        call_id: call.call_id.clone(),
        command: call.argv.clone(),
        cmd: args.cmd.clone(),
        cwd: call.cwd.clone(),
        parsed_cmd,
        tty,
        started,
        aggregated: HeadTailBuffer::new(AGGREGATED_OUTPUT_BYTES),
        ended: false,
    };
    let yield_time = clamp_ms(
        args.yield_time_ms,
        DEFAULT_EXEC_YIELD_MS,
        MIN_YIELD_MS,
        MAX_YIELD_MS,
    );
    let polled = match poll(ctx, &mut process, yield_time).await {
        Ok(polled) => polled,
        Err(stop) => {
            // Kept so the interrupt that stopped the turn ends it and reports its end
            // like every other live session.
            let shared = Arc::new(tokio::sync::Mutex::new(process));
            if let Some(pruned) = unified.insert(id, shared, summary.clone()) {
                close_session(ctx.host.as_ref(), &ctx.ids, pruned.id, pruned.process).await;
            }
            return Err(stop);
        }
    };
    let mut notes = polled.notes;
    let status = match polled.exit_code {
        Some(code) => {
            report_exit(ctx, &mut process, id, code, &polled.output).await;
            ProcessStatus::Exited(code)
        }
        None => {
            let shared = Arc::new(tokio::sync::Mutex::new(process));
            if let Some(pruned) = unified.insert(id, shared, summary.clone()) {
                notes.push(format!(
                    "session {} was closed to stay within {} live sessions",
                    pruned.id,
                    crate::unified_exec::MAX_SESSIONS
                ));
                close_session(ctx.host.as_ref(), &ctx.ids, pruned.id, pruned.process).await;
            }
            ProcessStatus::Running(id)
        }
    };
    Ok(render_chunk(&ChunkReport {
        cmd: &args.cmd,
        wall_time: call_started.elapsed(),
        status,
        output: &polled.output,
        max_output_tokens: max_tokens(args.max_output_tokens, ctx.turn.tool_output_token_limit),
        notes: &notes,
    }))
}

/// Runs a `write_stdin` call: writes `chars` (if any) to a live session, then returns
/// what it printed within the wait.
pub(super) async fn write_stdin(
    ctx: &ToolContext,
    args: WriteStdinArgs,
) -> Result<String, TurnStop> {
    let call_started = Instant::now();
    let unified = ctx.host.unified_exec();
    let id = args.session_id as i32;
    let Some(shared) = unified.get(id).filter(|_| args.session_id.fract() == 0.0) else {
        let live = unified.ids();
        let live = if live.is_empty() {
            "there are no live sessions".to_string()
        } else {
            let ids: Vec<String> = live.iter().map(i32::to_string).collect();
            format!("live sessions: {}", ids.join(", "))
        };
        return Ok(format!(
            "write_stdin failed: unknown session ID {} ({live}); the process may have \
             exited already, which an earlier call reported",
            args.session_id
        ));
    };
    let mut process = shared.lock().await;
    let yield_time = if args.chars.is_empty() {
        clamp_ms(
            args.yield_time_ms,
            MIN_POLL_YIELD_MS,
            MIN_POLL_YIELD_MS,
            MAX_POLL_YIELD_MS,
        )
    } else {
        if !process.tty {
            return Ok(format!(
                "write_stdin failed: session {id} has no terminal, so its input is closed; \
                 start the command with `tty: true` to write to it (an empty `chars` \
                 polls its output)"
            ));
        }
        if let Err(err) = process.handle.write(args.chars.clone().into_bytes()).await {
            return Ok(format!("write_stdin failed: {err}"));
        }
        ctx.host
            .send_event(
                &ctx.ids.sub_id,
                EventMsg::TerminalInteraction(TerminalInteractionEvent {
                    call_id: process.call_id.clone(),
                    process_id: id.to_string(),
                    stdin: args.chars.clone(),
                }),
            )
            .await;
        clamp_ms(
            args.yield_time_ms,
            DEFAULT_WRITE_YIELD_MS,
            MIN_YIELD_MS,
            MAX_YIELD_MS,
        )
    };
    let polled = poll(ctx, &mut process, yield_time).await?;
    let status = match polled.exit_code {
        Some(code) => {
            unified.remove(id);
            report_exit(ctx, &mut process, id, code, &polled.output).await;
            ProcessStatus::Exited(code)
        }
        None => ProcessStatus::Running(id),
    };
    Ok(render_chunk(&ChunkReport {
        cmd: &process.cmd,
        wall_time: call_started.elapsed(),
        status,
        output: &polled.output,
        max_output_tokens: max_tokens(args.max_output_tokens, ctx.turn.tool_output_token_limit),
        notes: &polled.notes,
    }))
}

/// Collects output until the process exits or `yield_time` passes, streaming it to the
/// client as it comes.
async fn poll(
    ctx: &ToolContext,
    process: &mut UnifiedProcess,
    yield_time: Duration,
) -> Result<Polled, TurnStop> {
    let deadline = Instant::now() + yield_time;
    let mut output = HeadTailBuffer::new(CALL_OUTPUT_BYTES);
    let mut notes = Vec::new();
    let exit_code = loop {
        let collected = tokio::select! {
            () = ctx.cancel.cancelled() => return Err(TurnStop::Interrupted),
            collected = process.handle.next(Some(deadline)) => collected,
        };
        for (stream, chunk) in collected.chunks {
            output.push(&chunk);
            process.aggregated.push(&chunk);
            ctx.host
                .send_event(
                    &ctx.ids.sub_id,
                    EventMsg::ExecCommandOutputDelta(ExecCommandOutputDeltaEvent {
                        call_id: process.call_id.clone(),
                        stream,
                        chunk: Base64Bytes::from(chunk.to_vec()),
                    }),
                )
                .await;
        }
        if collected.dropped_bytes > 0 {
            notes.push("some output was lost before it could be read".to_string());
        }
        if let Some(code) = collected.exit_code {
            break Some(code);
        }
        if collected.disconnected {
            notes.push(
                "the connection to the exec-server was lost before the command ended: it \
                 started there and may have finished, partly run or still be running; its \
                 exit is unknown and it is not run again"
                    .to_string(),
            );
            break Some(-1);
        }
        if Instant::now() >= deadline {
            break None;
        }
    };
    Ok(Polled {
        output: output.to_lossy_string(),
        exit_code,
        notes,
    })
}

async fn report_exit(
    ctx: &ToolContext,
    process: &mut UnifiedProcess,
    id: i32,
    code: i32,
    shown: &str,
) {
    process.ended = true;
    let info = UnifiedProcessInfo::of(process, id);
    let aggregated = process.aggregated.to_lossy_string();
    send_end(ctx.host.as_ref(), &ctx.ids, &info, code, &aggregated, shown).await;
}
/// What an end event says about a process.
struct UnifiedProcessInfo<'a> {
    call_id: &'a CallId,
    command: &'a [String],
    cwd: &'a std::path::Path,
    parsed_cmd: &'a [keel_protocol::ParsedCommand],
    id: i32,
    started: Instant,
}

impl<'a> UnifiedProcessInfo<'a> {
    fn of(process: &'a UnifiedProcess, id: i32) -> Self {
        Self {
            call_id: &process.call_id,
            command: &process.command,
            cwd: &process.cwd,
            parsed_cmd: &process.parsed_cmd,
            id,
            started: process.started,
        }
    }
}

async fn send_end(
    session: &dyn ToolHost,
    ids: &TurnIds,
    process: &UnifiedProcessInfo<'_>,
    exit_code: i32,
    aggregated: &str,
    shown: &str,
) {
    session
        .send_event(
            &ids.sub_id,
            EventMsg::ExecCommandEnd(ExecCommandEndEvent {
                call_id: process.call_id.clone(),
                turn_id: ids.turn_id.clone(),
                command: process.command.to_vec(),
                cwd: process.cwd.to_path_buf(),
                parsed_cmd: process.parsed_cmd.to_vec(),
                source: ExecCommandSource::UnifiedExecStartup,
                process_id: Some(process.id.to_string()),
                stdout: aggregated.to_string(),
                stderr: String::new(),
                aggregated_output: aggregated.to_string(),
                exit_code,
                duration: process.started.elapsed(),
                formatted_output: shown.to_string(),
                status: if exit_code == 0 {
                    ExecCommandStatus::Completed
                } else {
                    ExecCommandStatus::Failed
                },
            }),
        )
        .await;
}

/// Kills a session's process and reports its end.
async fn close_session(session: &dyn ToolHost, ids: &TurnIds, id: i32, process: SharedProcess) {
    let mut process = process.lock().await;
    if process.ended {
        // A call saw it exit (and reported it) while this close waited for the process.
        return;
    }
    process.ended = true;
    process.handle.kill().await;
    let deadline = Instant::now() + KILL_REPORT_TIMEOUT;
    let exit_code = loop {
        let collected = process.handle.next(Some(deadline)).await;
        for (_, chunk) in &collected.chunks {
            process.aggregated.push(chunk);
        }
        if let Some(code) = collected.exit_code {
            break code;
        }
        if collected.disconnected || Instant::now() >= deadline {
            break -1;
        }
    };
    let info = UnifiedProcessInfo::of(&process, id);
    let aggregated = process.aggregated.to_lossy_string();
    send_end(session, ids, &info, exit_code, &aggregated, "").await;
}

/// Kills the live session with this id (the model's session number as text), or every one
/// when `only` is `None`, reporting each one's end; an unknown id closes nothing.
pub(crate) async fn close_sessions(session: &dyn ToolHost, ids: &TurnIds, only: Option<&str>) {
    let Some(only) = only else {
        return close_all_sessions(session, ids).await;
    };
    let Ok(id) = only.parse::<i32>() else {
        return;
    };
    let table = session.unified_exec();
    if let Some(process) = table.get(id) {
        table.remove(id);
        close_session(session, ids, id, process).await;
    }
}

/// Kills every live session of the conversation (an interrupt, or the conversation ends),
/// reporting each one's end.
pub(crate) async fn close_all_sessions(session: &dyn ToolHost, ids: &TurnIds) {
    for (id, process) in session.unified_exec().take_all() {
        close_session(session, ids, id, process).await;
    }
}
