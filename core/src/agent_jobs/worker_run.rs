//! One row's worker: a worker agent runs until its turn ends, it times out, or the job halts;
//! the row is completed if the worker reported, failed (with why) if not. The same for a
//! job the model started and for `keel agent-job work`.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use keel_protocol::{CollabAgentState, CollabAgentStatus, InputItem};
use tokio_util::sync::CancellationToken;

use super::{
    ClaimedItem, ItemEnd, JobError, JobRecord, JobStore, JobWorker, lease_renewal, render,
    row_object, worker_prompt,
};
use crate::config::Config;
use crate::conversation::Conversation;

/// Starts and stops worker conversations: a conversation's agent tree, or a manager of its own.
pub(crate) trait WorkerHost: Send + Sync {
    /// Starts a worker agent on `input`, its turn continuing the span `traceparent` (the
    /// job's) when there is one.
    fn spawn_worker(
        &self,
        config: Config,
        input: Vec<InputItem>,
        worker: Arc<JobWorker>,
        traceparent: Option<String>,
    ) -> BoxFuture<'_, Result<Arc<Conversation>, String>>;

    /// Shuts a worker down and waits (bounded) until its commands have stopped.
    fn shut_down<'a>(&'a self, conversation: &'a Arc<Conversation>) -> BoxFuture<'a, ()>;
}

/// What every row of one run shares.
pub(crate) struct RowRun {
    pub store: Arc<dyn JobStore>,
    pub job: JobRecord,
    pub schema: Option<Arc<jsonschema::Validator>>,
    pub config: Config,
    pub max_runtime: Duration,
    /// Who holds this run's leases.
    pub holder: String,
    /// Cancelled when a worker reports `stop: true`.
    pub stop: CancellationToken,
    /// Cancelled to end every running worker (stop or interrupt).
    pub halt: CancellationToken,
    /// Where finished rows are counted (`keel.agent_job.rows`).
    pub telemetry: crate::telemetry::Telemetry,
}

/// What became of one worker's row.
pub(crate) enum WorkerEnd {
    Completed,
    Failed,
    Cancelled,
    /// The row's outcome could not be recorded: the job store failed.
    Unrecorded(JobError),
}

/// The lease holder name of this process: host, process id and a random tag (one process may
/// run several jobs' workers).
pub(crate) fn holder_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "host".to_string());
    let tag = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}:{}:{}", std::process::id(), &tag[..8])
}

/// Renews a holder's leases until dropped.
pub(crate) struct Heartbeat {
    task: tokio::task::JoinHandle<()>,
}

impl Heartbeat {
    /// Starts renewing `holder`'s leases on `job_id` every third of `lease`.
    pub(crate) fn start(
        store: Arc<dyn JobStore>,
        job_id: String,
        holder: String,
        lease: Duration,
    ) -> Self {
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(lease_renewal(lease));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                if let Err(err) = store.renew_leases(&job_id, &holder, lease).await {
                    tracing::warn!(job = %job_id, "could not renew row leases: {err}");
                }
            }
        });
        Self { task }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs one claimed row to its end and records it.
pub(crate) async fn run_row(host: &dyn WorkerHost, run: &RowRun, item: ClaimedItem) -> WorkerEnd {
    let job = &run.job;
    let task = render(&job.instruction, &job.headers, &item.fields);
    let row = row_object(&job.headers, &item.fields);
    let prompt = worker_prompt(
        &job.id,
        &item.item_id,
        &task,
        &row,
        job.output_schema.as_ref(),
    );
    let worker = Arc::new(JobWorker {
        store: run.store.clone(),
        job_id: job.id.clone(),
        item_id: item.item_id.clone(),
        schema: run.schema.clone(),
        stop: run.stop.clone(),
    });
    let (end, why) = match host
        .spawn_worker(
            run.config.clone(),
            vec![InputItem::Text { text: prompt }],
            worker,
            job.trace_context.clone(),
        )
        .await
    {
        Err(err) => (
            ItemEnd::Failed,
            format!("the worker could not start: {err}"),
        ),
        Ok(conversation) => {
            let mut status = conversation.watch_agent_status();
            let ended = tokio::select! {
                () = run.halt.cancelled() => None,
                waited = tokio::time::timeout(
                    run.max_runtime,
                    status.wait_for(|state| state.status.is_final()),
                ) => Some(match waited {
                    Ok(Ok(state)) => Ok(state.clone()),
                    Ok(Err(_)) => Ok(CollabAgentState::new(CollabAgentStatus::Shutdown)),
                    Err(_) => Err(()),
                }),
            };
            host.shut_down(&conversation).await;
            match ended {
                None if run.stop.is_cancelled() => (
                    ItemEnd::Cancelled,
                    "cancelled: a worker reported with stop=true".to_string(),
                ),
                // Interrupted: the row goes back to the queue (released by the runner).
                None => return WorkerEnd::Cancelled,
                Some(Err(())) => (
                    ItemEnd::Failed,
                    format!(
                        "the worker ran longer than max_runtime_seconds ({} s)",
                        run.max_runtime.as_secs_f64()
                    ),
                ),
                Some(Ok(state)) => (ItemEnd::Failed, unreported_reason(&state)),
            }
        }
    };
    let recorded = run
        .store
        .finish_unreported(&job.id, &item.item_id, &run.holder, item.attempt, end, &why)
        .await;
    let ended = match &recorded {
        Ok(true) => Some("completed"),
        Ok(false) if end == ItemEnd::Cancelled => Some("cancelled"),
        Ok(false) => Some("failed"),
        Err(_) => None,
    };
    if let Some(status) = ended {
        run.telemetry.job_row_ended(status);
    }
    match recorded {
        Ok(true) => WorkerEnd::Completed,
        Ok(false) if end == ItemEnd::Cancelled => WorkerEnd::Cancelled,
        Ok(false) => WorkerEnd::Failed,
        Err(err) => {
            tracing::error!(job = %job.id, item = %item.item_id, "recording the row: {err}");
            WorkerEnd::Unrecorded(err)
        }
    }
}

/// Why a worker whose turn ended has no result.
fn unreported_reason(state: &CollabAgentState) -> String {
    match state.status {
        CollabAgentStatus::Errored => format!(
            "the worker failed: {}",
            state.message.as_deref().unwrap_or("unknown error")
        ),
        CollabAgentStatus::Interrupted => "the worker's turn was interrupted".to_string(),
        CollabAgentStatus::Shutdown => "the worker stopped before reporting".to_string(),
        _ => "the worker finished without calling report_agent_job_result".to_string(),
    }
}
