//! A worker process on a job (`keel agent-job work`): claims rows under leases, runs a worker
//! agent on each, at most N at once, and stops when every row of the job has ended, whoever
//! worked it. Rows a dead worker held are claimed again once their leases run out.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{
    DEFAULT_LEASE, Heartbeat, JobCounts, JobError, JobStore, RowRun, WorkerEnd, WorkerHost,
    holder_id, run_row,
};
use crate::config::Config;
/// How often a process with nothing to claim looks again (rows held elsewhere may be
/// released, or their leases run out).
const IDLE_POLL: Duration = Duration::from_secs(1);
/// How often the job's counts are read for progress while workers run.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// How a worker process works a job.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WorkOptions {
    /// Worker agents at once in this process.
    pub concurrency: usize,
    /// How long a claimed row stays this process's without a renewal.
    pub lease: Duration,
    /// How long one worker agent may run.
    pub max_runtime: Duration,
}

impl Default for WorkOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            lease: DEFAULT_LEASE,
            max_runtime: Duration::from_secs(1800),
        }
    }
}

impl WorkOptions {
    /// Sets the worker agents at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Sets the lease of a claimed row.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(300));
        self
    }

    /// Sets how long one worker agent may run.
    pub fn max_runtime(mut self, max_runtime: Duration) -> Self {
        self.max_runtime = max_runtime;
        self
    }
}

/// What a worker process did, and where the job stands.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WorkSummary {
    /// Rows this process ran to an end.
    pub rows_worked: u64,
    /// The job's rows per status when the process stopped.
    pub counts: JobCounts,
    /// Whether the process was interrupted (its running rows went back to the queue).
    pub interrupted: bool,
    /// Whether a worker reported `stop: true` (pending rows were cancelled).
    pub stopped: bool,
    /// How long this process's claims took (successful ones), for capacity planning.
    pub claim_latency: ClaimLatency,
}

/// Percentiles of claim round trips, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct ClaimLatency {
    /// Claims measured.
    pub claims: u64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

impl ClaimLatency {
    fn from_samples(mut samples: Vec<Duration>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort();
        let at = |q: f64| {
            let index = ((samples.len() - 1) as f64 * q).round() as usize;
            samples[index.min(samples.len() - 1)].as_secs_f64() * 1000.0
        };
        Self {
            claims: samples.len() as u64,
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// Works job `job_id` of `store` until every row has ended (rows other processes hold
/// included), `cancel` fires (this process's running rows go back to the queue), or a worker
/// reports `stop: true`. Worker agents start through `host` and run with `config`;
/// `progress` hears the job's counts as they change.
pub(crate) async fn work_job(
    host: Arc<dyn WorkerHost>,
    config: Config,
    store: Arc<dyn JobStore>,
    job_id: &str,
    options: WorkOptions,
    cancel: CancellationToken,
    mut progress: impl FnMut(&JobCounts) + Send,
) -> Result<WorkSummary, JobError> {
    let job = store
        .job(job_id)
        .await?
        .ok_or_else(|| JobError::NoSuchJob {
            job_id: job_id.to_string(),
            store: store.describe(),
        })?;
    if job.status == "loading" {
        return Err(JobError::Loading(job.id));
    }
    let schema = match &job.output_schema {
        None => None,
        Some(schema) => Some(Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|err| JobError::BadSchema(err.to_string()))?,
        )),
    };
    let holder = holder_id();
    tracing::info!(job = %job.id, %holder, store = %store.describe(), "working agent job");
    let _heartbeat = Heartbeat::start(store.clone(), job.id.clone(), holder.clone(), options.lease);
    let run = Arc::new(RowRun {
        store: store.clone(),
        job,
        schema,
        config,
        max_runtime: options.max_runtime,
        holder: holder.clone(),
        stop: CancellationToken::new(),
        halt: CancellationToken::new(),
        // A worker process's own turns are traced by its conversations; its rows are not
        // counted as the job's owner counts them.
        telemetry: crate::telemetry::Telemetry::default(),
    });
    let mut workers: JoinSet<WorkerEnd> = JoinSet::new();
    let mut rows_worked = 0u64;
    let mut failure = None;
    let mut interrupted = false;
    let mut claim_times = Vec::new();
    let mut counts = store.counts(job_id).await?;
    let mut counted = std::time::Instant::now();
    progress(&counts);
    loop {
        let halted = run.halt.is_cancelled();
        // Fill the free places with claimed rows.
        let mut drained = false;
        while !halted && workers.len() < options.concurrency {
            let asked = std::time::Instant::now();
            match store.claim_next(job_id, &holder, options.lease).await {
                Ok(Some(item)) => {
                    claim_times.push(asked.elapsed());
                    tracing::info!(job = %job_id, item = %item.item_id, attempt = item.attempt, "claimed row");
                    let (host, run) = (host.clone(), run.clone());
                    workers.spawn(async move { run_row(host.as_ref(), &run, item).await });
                }
                Ok(None) => {
                    drained = true;
                    break;
                }
                Err(err) => {
                    failure = Some(err);
                    run.halt.cancel();
                    break;
                }
            }
        }
        if workers.is_empty() {
            if halted || run.halt.is_cancelled() {
                break;
            }
            match store.counts(job_id).await {
                Ok(now) => counts = now,
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            }
            progress(&counts);
            if counts.finished() {
                break;
            }
        }
        // Wait for a worker to end, a reason to stop, or (with room and nothing claimable)
        // the next look at the queue.
        let poll = drained || workers.len() < options.concurrency;
        tokio::select! {
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                run.halt.cancel();
            }
            () = run.stop.cancelled(), if !run.halt.is_cancelled() => run.halt.cancel(),
            Some(done) = workers.join_next(), if !workers.is_empty() => {
                rows_worked += 1;
                match done {
                    Ok(WorkerEnd::Unrecorded(err)) => {
                        failure.get_or_insert(err);
                        run.halt.cancel();
                    }
                    Ok(_) => {}
                    Err(err) => tracing::error!(job = %job_id, "worker task failed: {err}"),
                }
                // Counting scans the job's rows: once a second is enough for progress.
                if counted.elapsed() >= PROGRESS_EVERY {
                    match store.counts(job_id).await {
                        Ok(now) => {
                            counts = now;
                            progress(&counts);
                        }
                        // Stop claiming; the running workers end before this returns.
                        Err(err) => {
                            failure.get_or_insert(err);
                            run.halt.cancel();
                        }
                    }
                    counted = std::time::Instant::now();
                }
            }
            () = tokio::time::sleep(IDLE_POLL), if poll => {}
        }
    }
    // Rows this process still holds (interrupted, or a store failure) go back to the queue.
    let released = store.release(job_id, &holder).await?;
    if released > 0 {
        tracing::info!(job = %job_id, released, "rows put back in the queue");
    }
    if let Some(err) = failure {
        return Err(err);
    }
    let stopped = run.stop.is_cancelled();
    if stopped {
        store
            .cancel_pending(job_id, "cancelled: a worker reported with stop=true")
            .await?;
        store.set_job_status(job_id, "cancelled").await?;
    }
    counts = store.counts(job_id).await?;
    if !interrupted && !stopped && counts.finished() {
        store.set_job_status(job_id, "completed").await?;
    }
    progress(&counts);
    Ok(WorkSummary {
        rows_worked,
        counts,
        interrupted,
        stopped,
        claim_latency: ClaimLatency::from_samples(claim_times),
    })
}
