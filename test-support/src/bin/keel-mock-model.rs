//! `keel-mock-model`: serve a JSON script as an OpenAI-compatible model until interrupted.
//!
//! Exit codes: 0 after Ctrl-C/SIGTERM with no protocol violation recorded, 1 when violations
//! were recorded (listed on stderr), 2 on a usage or startup error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use keel_test_support::{CapturedRequest, MockModelServer, Script};

const FORMAT_HELP: &str = r#"SCRIPT FORMAT
  A JSON file: an array of turns, or {"model": "mock-model", "turns": [...]}.
  Each model request (POST /v1/responses or /v1/chat/completions) consumes one turn:

  {"items": [ITEM...], "fault"?: FAULT, "event_delay_ms"?: N,
   "usage"?: {"input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens"}}

  ITEM:
    {"type": "message", "text": "..."}
    {"type": "reasoning", "text": "..."}
    {"type": "shell_call", "call_id": "c1", "command": ["ls", "-l"], "workdir"?: "...", "timeout_ms"?: N}
    {"type": "function_call", "call_id": "c2", "name": "tool", "arguments": {..} or "json text"}
    {"type": "apply_patch_call", "call_id": "c3", "patch": "*** Begin Patch\n...*** End Patch\n"}
    {"type": "custom_tool_call", "call_id": "c4", "name": "tool", "input": "freeform text"}

  FAULT (events count SSE frames sent):
    {"type": "http_status", "status": 429, "body"?: "...", "retry_after"?: "2"}
    {"type": "disconnect", "after_events": N}
    {"type": "stall", "after_events": N, "duration_ms": N}
    {"type": "malformed_data", "after_events": N}
    {"type": "end_without_completed"}
    {"type": "response_failed", "code": "server_error", "message": "..."}

  When the script runs out, model requests get HTTP 500 naming `script_exhausted`, unless
  --repeat is given: then the script starts over.

EXAMPLE
  [{"items": [{"type": "shell_call", "call_id": "call-1", "command": ["echo", "hi"]}]},
   {"items": [{"type": "message", "text": "done"}]}]
"#;

/// Serve a scripted mock of the OpenAI Responses and Chat Completions APIs.
#[derive(Debug, Parser)]
#[command(name = "keel-mock-model", version, after_long_help = FORMAT_HELP)]
struct Args {
    /// The JSON script to serve (see --help for the format).
    #[arg(long, short, required_unless_present = "agent_job")]
    script: Option<PathBuf>,
    /// Instead of a script, run one agent job: answer the main agent with a
    /// `spawn_agents_on_csv` call with the arguments in this JSON file, and every worker
    /// (recognised by its `Job ID:`/`Item ID:` lines) with a report of its row. Requests are
    /// not logged in this mode (a job makes thousands).
    #[arg(long, conflicts_with = "script")]
    agent_job: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: String,
    /// Model id to advertise (overrides the script's `model`).
    #[arg(long)]
    model: Option<String>,
    /// Start the script over once it is used up, so it serves any number of runs.
    #[arg(long)]
    repeat: bool,
    /// Append each request (JSON, one per line: endpoint, path, headers, body) to this file.
    #[arg(long)]
    capture: Option<PathBuf>,
}

fn main() -> ExitCode {
    keel_exec_server::init_stderr_logging("warn");
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("keel-mock-model: cannot start the runtime: {err}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("keel-mock-model: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Serves until interrupted; `Ok(false)` when violations were recorded.
async fn run(args: Args) -> anyhow::Result<bool> {
    let mut builder = MockModelServer::builder()
        .bind(args.bind)
        .repeat(args.repeat);
    let quiet = args.agent_job.is_some();
    match (&args.script, &args.agent_job) {
        (_, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let job: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", path.display()))?;
            builder = builder.responder(keel_test_support::agent_job_responder(job));
        }
        (Some(path), None) => builder = builder.script(Script::load(path)?),
        (None, None) => anyhow::bail!("give --script or --agent-job"),
    }
    if let Some(model) = args.model {
        builder = builder.model(model);
    }
    let server = builder.start().await?;
    // The URI is the first stdout line, so scripts can read it.
    let mut stdout = std::io::stdout();
    if let Err(err) = writeln!(stdout, "{}", server.uri()).and_then(|()| stdout.flush()) {
        // A closed stdout (broken pipe) is not a reason to stop serving.
        tracing::debug!(%err, "could not print the URI");
    }
    eprintln!(
        "keel-mock-model: serving {} at {}",
        server.model(),
        server.uri()
    );

    let mut capture = match &args.capture {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open {}", path.display()))?,
        ),
        None => None,
    };
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot listen for SIGTERM")?;
    if quiet {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = sigterm.recv() => {}
        }
    } else {
        log_until_stopped(&server, capture.as_mut(), &mut sigterm).await?;
    }
    let violations = server.violations();
    for violation in &violations {
        eprintln!("keel-mock-model: violation: {violation}");
    }
    eprintln!(
        "keel-mock-model: served {} model request(s), {} turn(s) left",
        server.requests().len(),
        server.remaining_turns()
    );
    Ok(violations.is_empty())
}

/// Logs every request as it arrives until Ctrl-C or SIGTERM.
async fn log_until_stopped(
    server: &MockModelServer,
    mut capture: Option<&mut std::fs::File>,
    sigterm: &mut tokio::signal::unix::Signal,
) -> anyhow::Result<()> {
    let mut written = 0;
    loop {
        let next = server.wait_for_requests(
            server.requests().len() + 1,
            std::time::Duration::from_millis(200),
        );
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = sigterm.recv() => break,
            _ = next => {}
        }
        let all = server.all_requests();
        for request in all.iter().skip(written) {
            log_request(request, capture.as_deref_mut())?;
        }
        written = all.len();
    }
    Ok(())
}

fn log_request(
    request: &CapturedRequest,
    capture: Option<&mut std::fs::File>,
) -> anyhow::Result<()> {
    eprintln!(
        "keel-mock-model: request #{} {} {}",
        request.index, request.method, request.path
    );
    if let Some(file) = capture {
        let line = serde_json::to_string(request)?;
        writeln!(file, "{line}").context("cannot write the capture file")?;
    }
    Ok(())
}
