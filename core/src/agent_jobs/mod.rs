//! Agent jobs: one worker agent per CSV row, each reporting a result with
//! `report_agent_job_result`. The model starts one with `spawn_agents_on_csv`; a program (or
//! `keel agent-job`) starts one from a CSV and runs workers on it from any number of
//! processes. Rows and results live in a [`JobStore`]: SQLite on one host, PostgreSQL shared
//! by many; a job cut short (even by `kill -9`) goes on where it stopped, and results export
//! as a CSV in input order. A process works a job with
//! [`ConversationManager::work_agent_job`](crate::ConversationManager::work_agent_job).

mod csv_input;
mod error;
mod export;
mod instruction;
mod job_store;
mod load;
#[cfg(feature = "agent-jobs-postgres")]
mod postgres;
mod sqlite_store;
mod work;
mod worker_run;

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub(crate) use csv_input::CsvRows;
pub use error::JobError;
pub use export::export_results;
pub(crate) use instruction::{render, row_object, worker_prompt};
pub use job_store::{
    ClaimedItem, DEFAULT_LEASE, ExportRow, ItemEnd, JobCounts, JobRecord, JobStore, NewJob, NewRow,
    ReportOutcome, RunningItem, lease_renewal,
};
pub use load::{JobSpec, load_job};
#[cfg(feature = "agent-jobs-postgres")]
pub use postgres::PostgresJobStore;
pub use sqlite_store::{SQLITE_FILE_NAME, SqliteJobStore};
pub(crate) use work::work_job;
pub use work::{ClaimLatency, WorkOptions, WorkSummary};
pub(crate) use worker_run::{Heartbeat, RowRun, WorkerEnd, WorkerHost, holder_id, run_row};

/// Opens the store `spec` names: a `postgres://` / `postgresql://` URL or a libpq
/// `key=value` string (with `host=`, `service=`, ...) for the shared store, a path for a
/// SQLite file, or nothing for `<sqlite_home>/agent_jobs.sqlite3`.
pub async fn open_store(
    spec: Option<&str>,
    sqlite_home: &Path,
) -> Result<Arc<dyn JobStore>, JobError> {
    match spec.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(Arc::new(SqliteJobStore::open(sqlite_home).await?)),
        Some(spec) if is_postgres(spec) => open_postgres(spec).await,
        Some(path) => Ok(Arc::new(SqliteJobStore::open_file(Path::new(path)).await?)),
    }
}

/// Whether `spec` names a PostgreSQL store rather than a file.
fn is_postgres(spec: &str) -> bool {
    const LIBPQ_KEYS: [&str; 11] = [
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "service",
        "sslmode",
        "connect_timeout",
        "application_name",
    ];
    spec.starts_with("postgres://")
        || spec.starts_with("postgresql://")
        || spec
            .split_once('=')
            .is_some_and(|(key, _)| LIBPQ_KEYS.contains(&key.trim()))
}

#[cfg(feature = "agent-jobs-postgres")]
async fn open_postgres(spec: &str) -> Result<Arc<dyn JobStore>, JobError> {
    Ok(Arc::new(PostgresJobStore::connect(spec).await?))
}

#[cfg(not(feature = "agent-jobs-postgres"))]
async fn open_postgres(_spec: &str) -> Result<Arc<dyn JobStore>, JobError> {
    Err(JobError::BadStore(
        "this Keel was built without PostgreSQL (feature agent-jobs-postgres)".to_string(),
    ))
}

/// What a job worker needs to report its row's result.
pub(crate) struct JobWorker {
    pub store: Arc<dyn JobStore>,
    pub job_id: String,
    pub item_id: String,
    /// The job's `output_schema`, compiled; `None` accepts any object.
    pub schema: Option<Arc<jsonschema::Validator>>,
    /// Cancelled when a worker reports with `stop: true`.
    pub stop: CancellationToken,
}

impl JobWorker {
    /// Records a result for an item of the job, checked against the job's schema.
    pub(crate) async fn report(
        &self,
        job_id: &str,
        item_id: &str,
        result: serde_json::Value,
        stop: bool,
    ) -> Result<ReportOutcome, JobError> {
        if job_id != self.job_id {
            return Err(JobError::UnknownJob(job_id.to_string()));
        }
        if item_id != self.item_id {
            return Err(JobError::NotYourItem {
                given: item_id.to_string(),
                yours: self.item_id.clone(),
            });
        }
        if !result.is_object() {
            return Err(JobError::ResultNotObject);
        }
        if let Some(schema) = &self.schema {
            let problems: Vec<String> = schema
                .iter_errors(&result)
                .take(5)
                .map(|err| {
                    let at = err.instance_path.to_string();
                    if at.is_empty() {
                        err.to_string()
                    } else {
                        format!("{at}: {err}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(JobError::SchemaMismatch(problems.join("; ")));
            }
        }
        let outcome = self.store.record_report(job_id, item_id, &result).await?;
        if stop {
            self.stop.cancel();
        }
        Ok(outcome)
    }
}
