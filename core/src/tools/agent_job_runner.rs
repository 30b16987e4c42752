//! Running a job: claim rows, one worker agent each, at most N at once; record what became
//! of every row; export the results; answer the model with a summary.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use keel_protocol::{AgentJobProgressEvent, EventMsg, InputItem};
use serde::Deserialize;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::ToolHost;
use crate::agent_jobs::{
    ClaimedItem, DEFAULT_LEASE, Heartbeat, JobCounts, JobError, JobSpec, JobStore, JobWorker,
    RowRun, SqliteJobStore, WorkerEnd, WorkerHost, export_results, holder_id, load_job, run_row,
};
use crate::config::Config;
use crate::conversation::Conversation;
use crate::error::CoreError;
use crate::turn_context::{TurnContext, TurnIds, TurnStop};

/// Workers at once when the call does not say.
const DEFAULT_CONCURRENCY: usize = 16;
/// How long one worker may run when the call does not say.
const DEFAULT_MAX_RUNTIME: Duration = Duration::from_secs(1800);
/// The longest `max_runtime_seconds` taken.
const MAX_RUNTIME_CAP: Duration = Duration::from_secs(7 * 24 * 3600);
/// Least time between two progress events.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// Failed rows listed in the summary.
const FAILURES_SHOWN: usize = 5;

/// Arguments of `spawn_agents_on_csv`, with Codex's names.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobArgs {
    csv_path: String,
    instruction: String,
    #[serde(default)]
    id_column: Option<String>,
    #[serde(default)]
    output_csv_path: Option<String>,
    #[serde(default)]
    output_schema: Option<serde_json::Value>,
    #[serde(default)]
    max_concurrency: Option<f64>,
    #[serde(default)]
    max_workers: Option<f64>,
    #[serde(default)]
    max_runtime_seconds: Option<f64>,
}

/// What every worker of one run shares.
struct JobRun {
    row: RowRun,
    /// Workers at once.
    concurrency: usize,
}

/// Worker agents started in the calling conversation's agent tree.
struct SessionWorkers(Arc<dyn ToolHost>);

impl WorkerHost for SessionWorkers {
    fn spawn_worker(
        &self,
        config: Config,
        input: Vec<InputItem>,
        worker: Arc<JobWorker>,
        traceparent: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<Conversation>, String>> {
        Box::pin(async move {
            self.0
                .agents()
                .spawn_worker(config, input, worker, traceparent)
                .await
                .map_err(|err| err.to_string())
        })
    }

    fn shut_down<'a>(&'a self, conversation: &'a Arc<Conversation>) -> BoxFuture<'a, ()> {
        Box::pin(self.0.agents().shut_down(conversation))
    }
}

/// Runs the job the model asked for and returns the summary for the model; an interrupt
/// ends the turn (the job stays resumable).
pub(crate) async fn run_job(
    session: &Arc<dyn ToolHost>,
    context: &TurnContext,
    ids: &TurnIds,
    cancel: &CancellationToken,
    args: JobArgs,
    traceparent: Option<String>,
) -> Result<String, TurnStop> {
    let run = match prepare(session, context, args, traceparent).await {
        Ok(run) => run,
        Err(err) => return fail(err),
    };
    match drive(session, ids, cancel, run).await {
        Ok(summary) => Ok(summary),
        Err(DriveEnd::Interrupted) => Err(TurnStop::Interrupted),
        Err(DriveEnd::Failed(err)) => fail(err),
    }
}

/// A problem the model can act on goes back to it; a failed job database stops the turn,
/// because the job's progress can no longer be kept (the client hears why, and `keel exec`
/// exits non-zero).
fn fail(err: JobError) -> Result<String, TurnStop> {
    match err {
        JobError::Database { .. } => Err(TurnStop::Failed(CoreError::ToolFatal(err.to_string()))),
        other => Ok(error_output(&other)),
    }
}

fn error_output(err: &JobError) -> String {
    serde_json::json!({ "error": err.to_string() }).to_string()
}

fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

fn positive(value: Option<f64>, name: &str) -> Result<Option<f64>, JobError> {
    match value {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(JobError::BadArguments(format!(
            "{name} must be a positive number, got {v}"
        ))),
        other => Ok(other),
    }
}

/// Checks the arguments and finds the unfinished job they describe, or creates it.
async fn prepare(
    session: &Arc<dyn ToolHost>,
    context: &TurnContext,
    args: JobArgs,
    traceparent: Option<String>,
) -> Result<JobRun, JobError> {
    if args.instruction.trim().is_empty() {
        return Err(JobError::BadArguments("instruction is empty".to_string()));
    }
    let agents = session.agents();
    let csv_path = resolve(&context.cwd, &args.csv_path);
    let spec = JobSpec::new(csv_path.clone(), args.instruction.clone())
        .id_column(args.id_column.clone())
        .output_csv_path(
            args.output_csv_path
                .as_ref()
                .map(|p| resolve(&context.cwd, p)),
        )
        .output_schema(args.output_schema.clone())
        .trace_context(traceparent);
    let output_csv_path = spec.results_path();
    let schema = match &args.output_schema {
        None => None,
        Some(schema) => Some(Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|err| JobError::BadSchema(err.to_string()))?,
        )),
    };
    let requested = positive(args.max_concurrency.or(args.max_workers), "max_concurrency")?;
    // Capped at a week: anything longer means "no limit", and a huge value must not overflow.
    let max_runtime = positive(args.max_runtime_seconds, "max_runtime_seconds")?.map_or(
        DEFAULT_MAX_RUNTIME,
        |secs| {
            Duration::try_from_secs_f64(secs.min(MAX_RUNTIME_CAP.as_secs_f64()))
                .unwrap_or(MAX_RUNTIME_CAP)
        },
    );
    let metadata = std::fs::metadata(&csv_path).map_err(|err| JobError::ReadCsv {
        path: csv_path.clone(),
        cause: err.to_string(),
    })?;
    let modified = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let resume_key = format!(
        "{}\n{}\n{modified}\n{}\n{}\n{}\n{}",
        csv_path.display(),
        metadata.len(),
        output_csv_path.display(),
        args.id_column.as_deref().unwrap_or_default(),
        args.instruction,
        args.output_schema
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    );
    // The model's jobs live in this host's SQLite store, owned by the calling turn.
    let store: Arc<dyn JobStore> =
        Arc::new(SqliteJobStore::open(&agents.config().sqlite_home).await?);
    let job = match store.find_resumable(&resume_key).await? {
        Some(job) => {
            let requeued = store.requeue_running(&job.id).await?;
            tracing::info!(job = %job.id, total = job.total, requeued, "resuming agent job");
            job
        }
        None => load_job(store.as_ref(), spec.resume_key(Some(resume_key))).await?,
    };
    let concurrency = requested
        .map_or(DEFAULT_CONCURRENCY, |n| n as usize)
        .clamp(1, agents.max_threads());
    Ok(JobRun {
        row: RowRun {
            store,
            job,
            schema,
            config: agents.child_config(context, None, None),
            max_runtime,
            holder: holder_id(),
            stop: CancellationToken::new(),
            halt: CancellationToken::new(),
            telemetry: context.telemetry.clone(),
        },
        concurrency,
    })
}

enum DriveEnd {
    Interrupted,
    Failed(JobError),
}

impl From<JobError> for DriveEnd {
    fn from(err: JobError) -> Self {
        Self::Failed(err)
    }
}

/// Keeps up to `concurrency` workers busy until no row is pending, a worker asks to stop,
/// or the turn is interrupted; then exports the results.
async fn drive(
    session: &Arc<dyn ToolHost>,
    ids: &TurnIds,
    cancel: &CancellationToken,
    run: JobRun,
) -> Result<String, DriveEnd> {
    let run = Arc::new(run);
    let row = &run.row;
    let job_id = row.job.id.clone();
    let _heartbeat = Heartbeat::start(
        row.store.clone(),
        job_id.clone(),
        row.holder.clone(),
        DEFAULT_LEASE,
    );
    let mut counts = row.store.counts(&job_id).await?;
    let mut workers: JoinSet<WorkerEnd> = JoinSet::new();
    let mut exhausted = false;
    let mut interrupted = false;
    let mut last_progress: Option<Instant> = None;
    progress(
        session.as_ref(),
        ids,
        &job_id,
        &counts,
        &mut last_progress,
        true,
    )
    .await;
    loop {
        // Start workers while there is room, rows and no reason to stop.
        while !exhausted && workers.len() < run.concurrency && !row.halt.is_cancelled() {
            // With no worker of ours running, only the parent's own open sub-agents hold the
            // slots, and they free none while the parent waits in this call: say so instead of
            // waiting forever.
            if workers.is_empty() && session.agents().free_slots() == 0 {
                return Err(JobError::NoFreeSlot(session.agents().max_threads()).into());
            }
            let slot = tokio::select! {
                () = cancel.cancelled() => { interrupted = true; row.halt.cancel(); break; }
                () = row.stop.cancelled() => { row.halt.cancel(); break; }
                slot = session.agents().acquire_slot() => match slot {
                    Ok(slot) => slot,
                    Err(err) => { row.halt.cancel(); return Err(JobError::Store(err.to_string()).into()); }
                },
            };
            let claimed = match row
                .store
                .claim_next(&job_id, &row.holder, DEFAULT_LEASE)
                .await
            {
                Ok(claimed) => claimed,
                Err(err) => {
                    // Stop the running workers before giving up, so none is left behind.
                    row.halt.cancel();
                    while workers.join_next().await.is_some() {}
                    if let Err(requeue) = row.store.release(&job_id, &row.holder).await {
                        tracing::warn!(job = %job_id, "could not requeue rows: {requeue}");
                    }
                    return Err(err.into());
                }
            };
            match claimed {
                None => exhausted = true,
                Some(item) => {
                    counts.pending = counts.pending.saturating_sub(1);
                    counts.running += 1;
                    workers.spawn(run_worker(session.clone(), run.clone(), item, slot));
                }
            }
        }
        if workers.is_empty() {
            break;
        }
        tokio::select! {
            () = cancel.cancelled(), if !interrupted => { interrupted = true; row.halt.cancel(); }
            () = row.stop.cancelled(), if !row.halt.is_cancelled() => { row.halt.cancel(); }
            done = workers.join_next() => {
                counts.running = counts.running.saturating_sub(1);
                match done {
                    Some(Ok(WorkerEnd::Completed)) => counts.completed += 1,
                    Some(Ok(WorkerEnd::Failed)) => counts.failed += 1,
                    Some(Ok(WorkerEnd::Cancelled)) => counts.cancelled += 1,
                    Some(Ok(WorkerEnd::Unrecorded(err))) => {
                        // The job's state can no longer be kept: stop every worker and say so.
                        row.halt.cancel();
                        while workers.join_next().await.is_some() {}
                        return Err(err.into());
                    }
                    Some(Err(err)) => {
                        tracing::error!(job = %job_id, "worker task failed: {err}");
                        counts.failed += 1;
                    }
                    None => {}
                }
                progress(session.as_ref(), ids, &job_id, &counts, &mut last_progress, false).await;
            }
        }
    }
    if interrupted {
        // Rows cut short go back to the queue: calling the tool again resumes the job.
        row.store.release(&job_id, &row.holder).await?;
        return Err(DriveEnd::Interrupted);
    }
    let stopped = row.stop.is_cancelled();
    if stopped {
        row.store
            .cancel_pending(&job_id, "cancelled: a worker reported with stop=true")
            .await?;
    }
    export_results(
        row.store.as_ref(),
        &job_id,
        &row.job.headers,
        &row.job.output_csv_path,
    )
    .await?;
    row.store
        .set_job_status(&job_id, if stopped { "cancelled" } else { "completed" })
        .await?;
    let counts = row.store.counts(&job_id).await?;
    progress(
        session.as_ref(),
        ids,
        &job_id,
        &counts,
        &mut last_progress,
        true,
    )
    .await;
    let failures: serde_json::Map<String, serde_json::Value> = row
        .store
        .failures(&job_id, FAILURES_SHOWN)
        .await?
        .into_iter()
        .map(|(item, error)| (item, serde_json::Value::String(error)))
        .collect();
    Ok(serde_json::json!({
        "job_id": job_id,
        "status": if stopped { "cancelled" } else { "completed" },
        "total": counts.total,
        "completed": counts.completed,
        "failed": counts.failed,
        "cancelled": counts.cancelled,
        "output_csv_path": row.job.output_csv_path,
        "first_failures": failures,
    })
    .to_string())
}

/// Reports the job's counts, at most every [`PROGRESS_INTERVAL`] unless `force`.
async fn progress(
    session: &dyn ToolHost,
    ids: &TurnIds,
    job_id: &str,
    counts: &JobCounts,
    last: &mut Option<Instant>,
    force: bool,
) {
    if !force && last.is_some_and(|at| at.elapsed() < PROGRESS_INTERVAL) {
        return;
    }
    *last = Some(Instant::now());
    session
        .send_event(
            &ids.sub_id,
            EventMsg::AgentJobProgress(AgentJobProgressEvent {
                job_id: job_id.to_string(),
                total: counts.total,
                completed: counts.completed,
                failed: counts.failed,
                running: counts.running,
            }),
        )
        .await;
}

/// One row, holding one of the tree's thread slots while its worker runs.
async fn run_worker(
    session: Arc<dyn ToolHost>,
    run: Arc<JobRun>,
    item: ClaimedItem,
    _slot: OwnedSemaphorePermit,
) -> WorkerEnd {
    run_row(&SessionWorkers(session), &run.row, item).await
}
