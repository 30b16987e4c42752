//! Where a job's rows and results live. SQLite keeps them for the processes of one host;
//! PostgreSQL shares them between processes on any number of hosts. An embedder can bring
//! another store by implementing [`JobStore`].
//!
//! Rows are handed out under leases: a claim marks a row `running` for one holder until a
//! deadline, the holder renews the deadline while it works, and a row whose holder stopped
//! renewing (it crashed or was killed) is claimed again once the deadline has passed. A row's
//! result is recorded once: the first report wins, later ones are refused.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;

use super::JobError;

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JobRecord {
    /// The job's id (a UUID).
    pub id: String,
    /// The input CSV's columns.
    pub headers: Vec<String>,
    /// Rows in the job.
    pub total: u64,
    /// The instruction template each worker gets.
    pub instruction: String,
    /// Where the results CSV goes by default.
    pub output_csv_path: PathBuf,
    /// The JSON Schema every result must match, if any.
    pub output_schema: Option<serde_json::Value>,
    /// `loading`, `running`, `completed` or `cancelled`.
    pub status: String,
    /// The span of the tool call that started the job (a W3C `traceparent`), so the turns of
    /// its workers continue that trace; `None` when it was started without telemetry.
    pub trace_context: Option<String>,
}

impl JobRecord {
    /// A stored job (for stores outside this crate).
    pub fn new(
        id: String,
        headers: Vec<String>,
        total: u64,
        instruction: String,
        output_csv_path: PathBuf,
        output_schema: Option<serde_json::Value>,
        status: String,
    ) -> Self {
        Self {
            id,
            headers,
            total,
            instruction,
            output_csv_path,
            output_schema,
            status,
            trace_context: None,
        }
    }

    /// The same job, with the span its workers' turns continue.
    pub fn with_trace_context(mut self, trace_context: Option<String>) -> Self {
        self.trace_context = trace_context;
        self
    }
}

/// What a new job is made of (its rows are added with [`JobStore::add_rows`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NewJob {
    /// The job's id.
    pub id: String,
    /// Identifies the same job asked for again (same CSV, instruction and output), so the
    /// `spawn_agents_on_csv` tool resumes it instead of starting over.
    pub resume_key: String,
    /// The input CSV.
    pub csv_path: PathBuf,
    /// Where the results CSV goes by default.
    pub output_csv_path: PathBuf,
    /// The instruction template.
    pub instruction: String,
    /// The JSON Schema results must match.
    pub output_schema: Option<serde_json::Value>,
    /// The input CSV's columns.
    pub headers: Vec<String>,
    /// The span of the tool call starting the job (a W3C `traceparent`), kept with the job.
    pub trace_context: Option<String>,
}

impl NewJob {
    /// A job with a fresh id whose resume key is the CSV path and instruction.
    pub fn new(
        csv_path: PathBuf,
        output_csv_path: PathBuf,
        instruction: String,
        output_schema: Option<serde_json::Value>,
        headers: Vec<String>,
    ) -> Self {
        let resume_key = format!("{}\n{instruction}", csv_path.display());
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            resume_key,
            csv_path,
            output_csv_path,
            instruction,
            output_schema,
            headers,
            trace_context: None,
        }
    }

    /// The same job, kept with the span its workers' turns continue.
    pub fn with_trace_context(mut self, trace_context: Option<String>) -> Self {
        self.trace_context = trace_context;
        self
    }
}

/// One input row as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewRow {
    /// The row's id in the job (unique within it).
    pub item_id: String,
    /// 0-based position among the CSV's data rows: results are exported in this order.
    pub row_index: u64,
    /// The `id_column` value, when there is one.
    pub source_id: Option<String>,
    /// The fields, one per column.
    pub fields: Vec<String>,
}

impl NewRow {
    /// A row with its id, position, source id and fields.
    pub fn new(
        item_id: String,
        row_index: u64,
        source_id: Option<String>,
        fields: Vec<String>,
    ) -> Self {
        Self {
            item_id,
            row_index,
            source_id,
            fields,
        }
    }
}

/// A row handed to a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimedItem {
    /// The row's id in the job.
    pub item_id: String,
    /// The row's fields.
    pub fields: Vec<String>,
    /// How many times the row has been claimed, this claim included.
    pub attempt: u32,
}

impl ClaimedItem {
    /// A claimed row.
    pub fn new(item_id: String, fields: Vec<String>, attempt: u32) -> Self {
        Self {
            item_id,
            fields,
            attempt,
        }
    }
}

/// Rows per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct JobCounts {
    /// Rows in the job.
    pub total: u64,
    /// Waiting for a worker.
    pub pending: u64,
    /// Held by a worker now (or by one that died and whose lease has not run out).
    pub running: u64,
    /// Reported a result.
    pub completed: u64,
    /// Ended without a result.
    pub failed: u64,
    /// Cancelled before they ran.
    pub cancelled: u64,
}

impl JobCounts {
    /// Adds `n` rows of `status`.
    pub(crate) fn tally(&mut self, status: &str, n: u64) {
        self.total += n;
        match status {
            "pending" => self.pending += n,
            "running" => self.running += n,
            "completed" => self.completed += n,
            "failed" => self.failed += n,
            _ => self.cancelled += n,
        }
    }
}

impl JobCounts {
    /// Counts by status; `total` is their sum.
    pub fn new(pending: u64, running: u64, completed: u64, failed: u64, cancelled: u64) -> Self {
        Self {
            total: pending + running + completed + failed + cancelled,
            pending,
            running,
            completed,
            failed,
            cancelled,
        }
    }

    /// Whether every row has ended (completed, failed or cancelled).
    pub fn finished(&self) -> bool {
        self.pending == 0 && self.running == 0
    }
}

/// A row held by a worker, for status displays.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RunningItem {
    /// The row's id.
    pub item_id: String,
    /// Who holds it (`host:pid:tag`).
    pub holder: String,
    /// Claims so far, this one included.
    pub attempt: u32,
    /// Milliseconds until the lease runs out (negative: it has, and the row is claimable).
    pub lease_left_ms: i64,
}

impl RunningItem {
    /// A held row (for stores outside this crate).
    pub fn new(item_id: String, holder: String, attempt: u32, lease_left_ms: i64) -> Self {
        Self {
            item_id,
            holder,
            attempt,
            lease_left_ms,
        }
    }
}

/// A recorded report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReportOutcome {
    /// When it was recorded (RFC 3339, seconds).
    pub reported_at: String,
}

impl ReportOutcome {
    /// A report recorded at `reported_at` (RFC 3339).
    pub fn new(reported_at: String) -> Self {
        Self { reported_at }
    }
}

/// How a row that did not report ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ItemEnd {
    /// The worker failed, timed out or finished without reporting.
    Failed,
    /// The job was stopped before the row finished.
    Cancelled,
}

impl ItemEnd {
    /// The status stored for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One row of a job's results, in the columns the results CSV has after the input's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportRow {
    /// The input row's fields.
    pub fields: Vec<String>,
    /// The row's id.
    pub item_id: String,
    /// Its position in the input.
    pub row_index: u64,
    /// The `id_column` value, or empty.
    pub source_id: String,
    /// `pending`, `running`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// Claims so far.
    pub attempt_count: u32,
    /// Why it failed, or empty.
    pub last_error: String,
    /// The reported result (JSON), or empty.
    pub result_json: String,
    /// When the result was reported, or empty.
    pub reported_at: String,
    /// When the row ended, or empty.
    pub completed_at: String,
}

impl ExportRow {
    /// A row of results as the store holds it (for stores outside this crate): the input's
    /// fields, then the outcome columns in the results CSV's order.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        fields: Vec<String>,
        item_id: String,
        row_index: u64,
        source_id: String,
        status: String,
        attempt_count: u32,
        last_error: String,
        result_json: String,
        reported_at: String,
        completed_at: String,
    ) -> Self {
        Self {
            fields,
            item_id,
            row_index,
            source_id,
            status,
            attempt_count,
            last_error,
            result_json,
            reported_at,
            completed_at,
        }
    }
}

/// Timestamps as Codex writes them in results (`2026-11-23T22:24:21+00:00`).
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// A store of jobs, their rows and results, shared by every worker of a job.
///
/// Implementations are `Send + Sync` and cheap to share behind an `Arc`; every method is
/// one atomic step, so any number of processes may call them at once on the same job.
///
/// ```
/// # async fn demo(store: std::sync::Arc<dyn keel_core::agent_jobs::JobStore>) -> Result<(), keel_core::agent_jobs::JobError> {
/// use std::time::Duration;
/// // A worker: claim a row, work on it, record its result.
/// if let Some(item) = store.claim_next("job-id", "host:42:a1", Duration::from_secs(60)).await? {
///     let result = serde_json::json!({ "done": item.item_id });
///     store.record_report("job-id", &item.item_id, &result).await?;
/// }
/// # Ok(()) }
/// ```
pub trait JobStore: Send + Sync {
    /// Names the store in messages (a path, or a database URL without its password).
    fn describe(&self) -> String;

    /// Records a new job in the `loading` state; rows follow with [`Self::add_rows`].
    fn begin_job(&self, job: NewJob) -> BoxFuture<'_, Result<(), JobError>>;

    /// Adds a batch of rows to a job that is loading.
    fn add_rows<'a>(
        &'a self,
        job_id: &'a str,
        rows: Vec<NewRow>,
    ) -> BoxFuture<'a, Result<(), JobError>>;

    /// Makes a loaded job claimable (`running`) with its number of rows.
    fn commit_job<'a>(&'a self, job_id: &'a str, total: u64)
    -> BoxFuture<'a, Result<(), JobError>>;

    /// Deletes a job and its rows (a job whose loading failed).
    fn discard_job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<(), JobError>>;

    /// The job with this id, if there is one.
    fn job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<Option<JobRecord>, JobError>>;

    /// The newest unfinished job with this resume key, if any.
    fn find_resumable<'a>(
        &'a self,
        resume_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<JobRecord>, JobError>>;

    /// Claims the first row (in input order) that is pending or whose lease has run out, for
    /// `holder` until `lease` from now; counts one more attempt.
    fn claim_next<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<ClaimedItem>, JobError>>;

    /// Extends the leases of every row `holder` holds to `lease` from now; returns how many.
    fn renew_leases<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<u64, JobError>>;

    /// Puts the rows `holder` holds back in the queue (an interrupted run); returns how many.
    fn release<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<u64, JobError>>;

    /// Puts every running row back in the queue, whoever holds it: for the one process that
    /// owns a job when it resumes it after a crash. Never call it while other workers run.
    fn requeue_running<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<u64, JobError>>;

    /// Records a row's result, once: a second report is refused with
    /// [`JobError::AlreadyReported`], an unknown row with [`JobError::UnknownItem`].
    fn record_report<'a>(
        &'a self,
        job_id: &'a str,
        item_id: &'a str,
        result: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<ReportOutcome, JobError>>;

    /// Ends a row that did not report, with why, if `holder`'s claim number `attempt` is
    /// still the row's latest: a row that reported meanwhile keeps its result, and a row
    /// claimed again since (by anyone, this holder included) is left to that claim.
    /// Returns whether the row has a result.
    fn finish_unreported<'a>(
        &'a self,
        job_id: &'a str,
        item_id: &'a str,
        holder: &'a str,
        attempt: u32,
        end: ItemEnd,
        error: &'a str,
    ) -> BoxFuture<'a, Result<bool, JobError>>;

    /// Cancels every pending row with why; returns how many.
    fn cancel_pending<'a>(
        &'a self,
        job_id: &'a str,
        why: &'a str,
    ) -> BoxFuture<'a, Result<u64, JobError>>;

    /// Rows per status.
    fn counts<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<JobCounts, JobError>>;

    /// Up to `limit` rows held by workers now, in input order.
    fn running_items<'a>(
        &'a self,
        job_id: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<RunningItem>, JobError>>;

    /// Ends a running job (`completed`, `cancelled`); a job that has ended keeps its status.
    fn set_job_status<'a>(
        &'a self,
        job_id: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), JobError>>;

    /// The first `limit` failed rows with their errors, in input order.
    fn failures<'a>(
        &'a self,
        job_id: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, JobError>>;

    /// Up to `limit` result rows after position `after` (`None`: from the start), in input
    /// order: the results CSV is written page by page from these.
    fn export_page<'a>(
        &'a self,
        job_id: &'a str,
        after: Option<u64>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ExportRow>, JobError>>;
}

/// How long a lease lasts before it must be renewed; [`lease_renewal`] renews it well before.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// How often a holder renews its leases: a third of the lease, so two renewals can fail or be
/// late before a live worker's rows look abandoned.
pub fn lease_renewal(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(100))
}
