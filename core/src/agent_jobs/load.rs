//! Loading a job from its CSV into a store, in batches, so a 100,000-row file never sits in
//! memory whole; a bad row (or a failed write) removes what was loaded.

use std::collections::HashSet;
use std::path::PathBuf;

use super::{CsvRows, JobError, JobRecord, JobStore, NewJob, NewRow};

/// Rows written to the store per batch.
const BATCH: usize = 1000;

/// What a new job is made of.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobSpec {
    /// The input CSV (a header, then one row per worker).
    pub csv_path: PathBuf,
    /// The instruction template; `{column}` placeholders take the row's values.
    pub instruction: String,
    /// The column whose value names each row (else `row-N`).
    pub id_column: Option<String>,
    /// Where the results CSV goes by default (else `<csv stem>.results.csv` beside the CSV).
    pub output_csv_path: Option<PathBuf>,
    /// The JSON Schema every result must match.
    pub output_schema: Option<serde_json::Value>,
    /// Identifies the same job asked for again; by default the CSV path and instruction.
    pub resume_key: Option<String>,
    /// The span the job's workers' turns continue (a W3C `traceparent`), kept with the job.
    pub trace_context: Option<String>,
}

impl JobSpec {
    /// A job over `csv_path` with `instruction` and nothing else set.
    pub fn new(csv_path: PathBuf, instruction: String) -> Self {
        Self {
            csv_path,
            instruction,
            id_column: None,
            output_csv_path: None,
            output_schema: None,
            resume_key: None,
            trace_context: None,
        }
    }

    /// Keeps `traceparent` with the job, so its workers' turns continue that span.
    pub fn trace_context(mut self, traceparent: Option<String>) -> Self {
        self.trace_context = traceparent;
        self
    }

    /// Names each row by the value of `column`.
    pub fn id_column(mut self, column: Option<String>) -> Self {
        self.id_column = column;
        self
    }

    /// Sets where the results CSV goes by default.
    pub fn output_csv_path(mut self, path: Option<PathBuf>) -> Self {
        self.output_csv_path = path;
        self
    }

    /// Sets the JSON Schema results must match.
    pub fn output_schema(mut self, schema: Option<serde_json::Value>) -> Self {
        self.output_schema = schema;
        self
    }

    /// Sets the key that finds this job again.
    pub fn resume_key(mut self, key: Option<String>) -> Self {
        self.resume_key = key;
        self
    }

    /// Where the results CSV goes.
    pub fn results_path(&self) -> PathBuf {
        self.output_csv_path.clone().unwrap_or_else(|| {
            let stem = self
                .csv_path
                .file_stem()
                .map_or_else(|| "job".into(), |s| s.to_string_lossy().into_owned());
            self.csv_path.with_file_name(format!("{stem}.results.csv"))
        })
    }
}

/// Reads up to [`BATCH`] rows off the async threads.
async fn read_batch(
    mut rows: CsvRows,
) -> Result<(CsvRows, Vec<super::csv_input::CsvRow>), JobError> {
    tokio::task::spawn_blocking(move || {
        let mut batch = Vec::with_capacity(BATCH);
        while batch.len() < BATCH {
            match rows.next_row()? {
                Some(row) => batch.push(row),
                None => break,
            }
        }
        Ok((rows, batch))
    })
    .await
    .map_err(|err| JobError::Store(err.to_string()))?
}

/// Creates the job `spec` describes in `store`, one pending row per CSV row, and returns it.
/// An output schema that is not a JSON Schema, a missing `id_column`, an empty or malformed
/// CSV: each is refused with the problem named, leaving nothing in the store.
pub async fn load_job(store: &dyn JobStore, spec: JobSpec) -> Result<JobRecord, JobError> {
    if spec.instruction.trim().is_empty() {
        return Err(JobError::BadArguments("instruction is empty".to_string()));
    }
    if let Some(schema) = &spec.output_schema {
        jsonschema::validator_for(schema).map_err(|err| JobError::BadSchema(err.to_string()))?;
    }
    let output_csv_path = spec.results_path();
    let path = spec.csv_path.clone();
    let id_column = spec.id_column.clone();
    let rows = tokio::task::spawn_blocking(move || CsvRows::open(&path, id_column.as_deref()))
        .await
        .map_err(|err| JobError::Store(err.to_string()))??;
    let headers = rows.headers().to_vec();
    let mut job = NewJob::new(
        spec.csv_path.clone(),
        output_csv_path,
        spec.instruction.clone(),
        spec.output_schema.clone(),
        headers,
    )
    .with_trace_context(spec.trace_context.clone());
    if let Some(key) = spec.resume_key {
        job.resume_key = key;
    }
    let record = JobRecord {
        id: job.id.clone(),
        headers: job.headers.clone(),
        total: 0,
        instruction: job.instruction.clone(),
        output_csv_path: job.output_csv_path.clone(),
        output_schema: job.output_schema.clone(),
        status: "running".to_string(),
        trace_context: job.trace_context.clone(),
    };
    store.begin_job(job).await?;
    match load_rows(store, &record.id, rows, &spec.csv_path).await {
        Ok(total) => Ok(JobRecord { total, ..record }),
        Err(err) => {
            if let Err(cleanup) = store.discard_job(&record.id).await {
                tracing::warn!(job = %record.id, "could not remove a job that failed to load: {cleanup}");
            }
            Err(err)
        }
    }
}

/// Adds every row and makes the job claimable; returns the row count.
async fn load_rows(
    store: &dyn JobStore,
    job_id: &str,
    mut rows: CsvRows,
    csv_path: &std::path::Path,
) -> Result<u64, JobError> {
    // A row's id is its id column's value; an empty or repeated one (or one another row
    // took as its fallback) becomes `row-N`, made unique with a suffix if it must be.
    let mut used: HashSet<String> = HashSet::new();
    let mut total = 0u64;
    loop {
        let (rest, batch) = read_batch(rows).await?;
        rows = rest;
        if batch.is_empty() {
            break;
        }
        let mut new_rows = Vec::with_capacity(batch.len());
        for row in batch {
            let preferred = row
                .source_id
                .as_deref()
                .filter(|id| !id.trim().is_empty() && !used.contains(*id))
                .map(str::to_string);
            let item_id = preferred.unwrap_or_else(|| {
                let base = format!("row-{}", row.row_index + 1);
                let mut candidate = base.clone();
                let mut n = 2;
                while used.contains(&candidate) {
                    candidate = format!("{base}-{n}");
                    n += 1;
                }
                candidate
            });
            used.insert(item_id.clone());
            new_rows.push(NewRow::new(
                item_id,
                row.row_index,
                row.source_id,
                row.fields,
            ));
        }
        total += new_rows.len() as u64;
        store.add_rows(job_id, new_rows).await?;
    }
    if total == 0 {
        return Err(JobError::Empty(csv_path.to_path_buf()));
    }
    store.commit_job(job_id, total).await?;
    Ok(total)
}
