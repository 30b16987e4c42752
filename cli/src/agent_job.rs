//! `keel agent-job`: run an agent job from the command line, with workers in as many
//! processes (on as many hosts) as wanted. `start` loads a CSV into a store, `work` adds a
//! worker process, `status` shows progress, `export` writes the results CSV.
//!
//! The store is `--store` (or `KEEL_AGENT_JOB_STORE`): a `postgres://` URL or libpq
//! `key=value` string for the shared PostgreSQL store, a file path for SQLite, or nothing
//! for the SQLite file in the Keel home. Passwords come from `PGPASSWORD`, the password file
//! or a service file, as with libpq, never from the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use keel_core::agent_jobs::{
    JobCounts, JobSpec, JobStore, WorkOptions, export_results, load_job, open_store,
};
use keel_core::{Config, ConfigOverrides, ConversationManager, find_keel_home, parse_cli_override};
use keel_protocol::app_server::ThreadOverrides;
use keel_protocol::{AskForApproval, SandboxMode};
use tokio_util::sync::CancellationToken;

use crate::exec::check_config;
use crate::failure::usage;

/// Running rows `status` lists.
const RUNNING_SHOWN: usize = 20;
/// Least time between two progress lines of `work`.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// `keel agent-job` subcommands.
#[derive(Debug, Subcommand)]
pub enum AgentJobCommand {
    /// Load a CSV into the store as a new job and print its id (no worker starts).
    Start(StartArgs),
    /// Work a job: claim rows and run a worker agent on each until every row has ended.
    Work(WorkArgs),
    /// Show a job's progress (rows per status, rows held by workers).
    Status(StatusArgs),
    /// Write a job's results CSV (input columns, then each row's outcome, in input order).
    Export(ExportArgs),
}

/// Where the job lives.
#[derive(Debug, Args)]
pub struct StoreArg {
    /// The job store: postgres://user@host/db (or libpq key=value, e.g. service=jobs), a
    /// SQLite file, or (by default) agent_jobs.sqlite3 in the Keel home.
    #[arg(long, env = "KEEL_AGENT_JOB_STORE", value_name = "STORE")]
    store: Option<String>,
}

/// `keel agent-job start`.
#[derive(Debug, Args)]
pub struct StartArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The input CSV: a header, then one row per worker.
    #[arg(long, value_name = "FILE")]
    csv: PathBuf,
    /// The instruction each worker gets; `{column}` takes the row's value.
    #[arg(
        long,
        conflicts_with = "instruction_file",
        required_unless_present = "instruction_file"
    )]
    instruction: Option<String>,
    /// Read the instruction from a file.
    #[arg(long, value_name = "FILE")]
    instruction_file: Option<PathBuf>,
    /// The column whose value names each row (else row-N).
    #[arg(long, value_name = "COLUMN")]
    id_column: Option<String>,
    /// A JSON Schema file every result must match.
    #[arg(long, value_name = "FILE")]
    output_schema: Option<PathBuf>,
    /// Where `export` writes the results by default (else <csv>.results.csv beside the CSV).
    #[arg(long, value_name = "FILE")]
    output_csv: Option<PathBuf>,
}

/// `keel agent-job work`.
#[derive(Debug, Args)]
pub struct WorkArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The job's id (as `start` printed it).
    job_id: String,
    /// Worker agents at once in this process.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    concurrency: u32,
    /// Seconds a claimed row stays this process's without a renewal (renewed every third);
    /// a killed worker's rows are claimed again after it.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    lease_seconds: f64,
    /// Seconds one worker agent may run before its row fails.
    #[arg(long, default_value_t = 1800.0, value_name = "SECONDS")]
    max_runtime_seconds: f64,
    /// The model workers use.
    #[arg(short, long)]
    model: Option<String>,
    /// A config.toml override, `key=value` (repeatable).
    #[arg(short = 'c', long = "config", value_name = "key=value")]
    config_overrides: Vec<String>,
    /// The sandbox for workers' commands.
    #[arg(short, long, value_enum)]
    sandbox: Option<SandboxArg>,
    /// The directory workers run in.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,
}

/// The sandbox modes `work` accepts.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SandboxArg {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

/// `keel agent-job status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The job's id.
    job_id: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `keel agent-job export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// The job's id.
    job_id: String,
    /// Where to write the CSV (default: the job's output path).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs a `keel agent-job` subcommand.
pub async fn run(command: AgentJobCommand) -> anyhow::Result<ExitCode> {
    match command {
        AgentJobCommand::Start(args) => start(args).await,
        AgentJobCommand::Work(args) => work(args).await,
        AgentJobCommand::Status(args) => status(args).await,
        AgentJobCommand::Export(args) => export(args).await,
    }
}

/// The configuration without model checks: enough to find the default store.
fn plain_config() -> anyhow::Result<Config> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    Ok(Config::load(&home, Vec::new(), ConfigOverrides::default())?)
}

async fn store(arg: &StoreArg, config: &Config) -> anyhow::Result<Arc<dyn JobStore>> {
    Ok(open_store(arg.store.as_deref(), &config.sqlite_home).await?)
}

fn current_dir_path(path: &std::path::Path) -> anyhow::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(path))
}

async fn start(args: StartArgs) -> anyhow::Result<ExitCode> {
    let instruction = match (&args.instruction, &args.instruction_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|err| usage(format!("--instruction-file {}: {err}", file.display())))?,
        (None, None) => return Err(usage("give --instruction or --instruction-file")),
    };
    let schema = match &args.output_schema {
        None => None,
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|err| usage(format!("--output-schema {}: {err}", file.display())))?;
            Some(serde_json::from_str(&text).map_err(|err| {
                usage(format!(
                    "--output-schema {}: not JSON: {err}",
                    file.display()
                ))
            })?)
        }
    };
    let config = plain_config()?;
    let store = store(&args.store, &config).await?;
    let spec = JobSpec::new(current_dir_path(&args.csv)?, instruction)
        .id_column(args.id_column)
        .output_schema(schema)
        .output_csv_path(
            args.output_csv
                .as_deref()
                .map(current_dir_path)
                .transpose()?,
        )
        // The caller's span, by the usual convention for command-line tools: the workers'
        // turns continue it, on whatever host works the job.
        .trace_context(
            std::env::var("TRACEPARENT")
                .ok()
                .filter(|traceparent| !traceparent.trim().is_empty()),
        );
    let job = load_job(store.as_ref(), spec)
        .await
        .map_err(|err| usage(err.to_string()))?;
    eprintln!(
        "keel: job {} has {} rows in {}; add workers with `keel agent-job work {}`",
        job.id,
        job.total,
        store.describe(),
        job.id
    );
    println!("{}", job.id);
    Ok(ExitCode::SUCCESS)
}

fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    if !(value.is_finite() && value > 0.0) {
        return Err(usage(format!(
            "{flag} must be a positive number of seconds"
        )));
    }
    Duration::try_from_secs_f64(value).map_err(|err| usage(format!("{flag}: {err}")))
}

fn progress_line(counts: &JobCounts) -> String {
    format!(
        "{}/{} done ({} completed, {} failed, {} cancelled), {} running, {} pending",
        counts.completed + counts.failed + counts.cancelled,
        counts.total,
        counts.completed,
        counts.failed,
        counts.cancelled,
        counts.running,
        counts.pending
    )
}

async fn work(args: WorkArgs) -> anyhow::Result<ExitCode> {
    let lease = seconds("--lease-seconds", args.lease_seconds)?;
    let max_runtime = seconds("--max-runtime-seconds", args.max_runtime_seconds)?;
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let cli_overrides = args
        .config_overrides
        .iter()
        .map(|raw| parse_cli_override(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = match &args.cwd {
        Some(dir) => crate::exec::checked_cwd(dir)?,
        None => std::env::current_dir().context("reading the current directory")?,
    };
    // No one is there to answer approvals: workers never ask.
    let overrides = ThreadOverrides {
        model: args.model.clone(),
        cwd: Some(cwd),
        sandbox: args.sandbox.map(|s| match s {
            SandboxArg::ReadOnly => SandboxMode::ReadOnly,
            SandboxArg::WorkspaceWrite => SandboxMode::WorkspaceWrite,
            SandboxArg::DangerFullAccess => SandboxMode::DangerFullAccess,
        }),
        approval_policy: Some(AskForApproval::Never),
        ..ThreadOverrides::default()
    };
    let config = check_config(&home, &cli_overrides, &overrides, false)?;
    let store = store(&args.store, &config).await?;
    let manager = ConversationManager::new();
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("keel: interrupted; putting this worker's rows back in the queue");
            on_signal.cancel();
        }
    });
    let mut last: Option<Instant> = None;
    let options = WorkOptions::default()
        .concurrency(args.concurrency as usize)
        .lease(lease)
        .max_runtime(max_runtime);
    let summary = manager
        .work_agent_job(config, store, &args.job_id, options, cancel, |counts| {
            if last.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) || counts.finished() {
                last = Some(Instant::now());
                eprintln!("keel: job {}: {}", args.job_id, progress_line(counts));
            }
        })
        .await
        .map_err(|err| match err {
            keel_core::agent_jobs::JobError::NoSuchJob { .. }
            | keel_core::agent_jobs::JobError::BadStore(_) => usage(err.to_string()),
            other => other.into(),
        })?;
    println!(
        "{}",
        serde_json::json!({
            "job_id": args.job_id,
            "rows_worked": summary.rows_worked,
            "interrupted": summary.interrupted,
            "stopped": summary.stopped,
            "counts": summary.counts,
            "claim_ms": summary.claim_latency,
        })
    );
    Ok(if summary.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

async fn job_or_usage(
    store: &dyn JobStore,
    job_id: &str,
) -> anyhow::Result<keel_core::agent_jobs::JobRecord> {
    store
        .job(job_id)
        .await?
        .ok_or_else(|| usage(format!("no job `{job_id}` in {}", store.describe())))
}

async fn status(args: StatusArgs) -> anyhow::Result<ExitCode> {
    let config = plain_config()?;
    let store = store(&args.store, &config).await?;
    let job = job_or_usage(store.as_ref(), &args.job_id).await?;
    let counts = store.counts(&job.id).await?;
    let running = store.running_items(&job.id, RUNNING_SHOWN).await?;
    let failures = store.failures(&job.id, 5).await?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "job_id": job.id,
                "status": job.status,
                "counts": counts,
                "running": running,
                "first_failures": failures
                    .iter()
                    .map(|(item, error)| serde_json::json!({"item_id": item, "error": error}))
                    .collect::<Vec<_>>(),
                "output_csv_path": job.output_csv_path,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "job {} ({}): {}",
        job.id,
        job.status,
        progress_line(&counts)
    );
    for item in &running {
        let lease = if item.lease_left_ms >= 0 {
            format!("lease {:.1} s left", item.lease_left_ms as f64 / 1000.0)
        } else {
            "lease expired: claimable again".to_string()
        };
        println!(
            "  running {} (attempt {}) on {}: {lease}",
            item.item_id, item.attempt, item.holder
        );
    }
    for (item, error) in &failures {
        println!("  failed {item}: {error}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let config = plain_config()?;
    let store = store(&args.store, &config).await?;
    let job = job_or_usage(store.as_ref(), &args.job_id).await?;
    let out = match &args.out {
        Some(path) => current_dir_path(path)?,
        None => job.output_csv_path.clone(),
    };
    let rows = export_results(store.as_ref(), &job.id, &job.headers, &out).await?;
    let counts = store.counts(&job.id).await?;
    if !counts.finished() {
        eprintln!(
            "keel: warning: job {} is not finished ({}); the export shows it as it stands",
            job.id,
            progress_line(&counts)
        );
    }
    eprintln!("keel: wrote {rows} rows to {}", out.display());
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}
