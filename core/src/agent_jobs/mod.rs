//! Agent jobs (`spawn_agents_on_csv`): one worker agent per CSV row, at most N at once, each
//! reporting a result with `report_agent_job_result`; progress kept in SQLite so a job cut
//! short (even by `kill -9`) resumes where it stopped, and results exported as a CSV.

mod csv_input;
mod error;
mod export;
mod instruction;
mod store;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub(crate) use csv_input::CsvRows;
pub(crate) use error::JobError;
pub(crate) use export::export_results;
pub(crate) use instruction::{render, row_object, worker_prompt};
pub(crate) use store::{ClaimedItem, JobCounts, JobRecord, JobStore, NewJob, ReportOutcome};

/// What a job worker needs to report its row's result.
pub(crate) struct JobWorker {
    pub store: JobStore,
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
