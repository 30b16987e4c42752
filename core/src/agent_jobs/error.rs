//! Why a job could not start or a report was refused; the text is what the model reads.

use std::path::PathBuf;

/// A job or report problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The input CSV could not be read.
    #[error("cannot read {path}: {cause}")]
    ReadCsv {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        cause: String,
    },
    /// A row is malformed.
    #[error("{path}: row {row} (line {line}): {problem}")]
    BadRow {
        /// The file.
        path: PathBuf,
        /// 1-based data row (the header is not counted).
        row: u64,
        /// 1-based line where the row starts.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// A header column is repeated, or named like one of the results columns.
    #[error("{path}: csv header {column} {problem}")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// The column.
        column: String,
        /// Why it cannot be used.
        problem: String,
    },
    /// The CSV has a header and no rows, or nothing at all.
    #[error("{0}: no rows to process")]
    Empty(PathBuf),
    /// `id_column` is not a column.
    #[error("id_column `{column}` is not a column of the CSV (columns: {columns})")]
    NoSuchColumn {
        /// The column asked for.
        column: String,
        /// The header.
        columns: String,
    },
    /// `output_schema` is not a valid JSON Schema.
    #[error("output_schema is not a valid JSON Schema: {0}")]
    BadSchema(String),
    /// Bad tool arguments.
    #[error("{0}")]
    BadArguments(String),
    /// The job id is not the worker's job.
    #[error("unknown job_id `{0}`; use the Job ID line of your instructions")]
    UnknownJob(String),
    /// The item is not in the job.
    #[error("unknown item_id `{0}` in this job; use the Item ID line of your instructions")]
    UnknownItem(String),
    /// The item is another worker's.
    #[error("item_id `{given}` is not your row; your Item ID is `{yours}`")]
    NotYourItem {
        /// The item given.
        given: String,
        /// The worker's own item.
        yours: String,
    },
    /// The item has a result already.
    #[error("item `{item_id}` already has a result (reported at {reported_at}); report once")]
    AlreadyReported {
        /// The item.
        item_id: String,
        /// When the first report arrived.
        reported_at: String,
    },
    /// `result` is not an object.
    #[error("`result` must be a JSON object")]
    ResultNotObject,
    /// `result` does not match the schema.
    #[error("`result` does not match the job's output_schema: {0}")]
    SchemaMismatch(String),
    /// Every thread slot is held by the caller's open sub-agents.
    #[error(
        "all {0} agent slots (agents.max_threads) are held by open sub-agents; close some with close_agent, then call spawn_agents_on_csv again to run (or resume) the job"
    )]
    NoFreeSlot(usize),
    /// A job database step failed; [`super::JobStore`] turns this into [`Self::Database`].
    #[error("agent job database: {0}")]
    Store(String),
    /// The job database (named) could not be opened, read or written.
    #[error("the agent job database {} failed: {cause}", path.display())]
    Database {
        /// The database file.
        path: PathBuf,
        /// What went wrong.
        cause: String,
    },
    /// The store was named wrongly (a bad URL, setting or service).
    #[error("bad job store: {0}")]
    BadStore(String),
    /// The shared store (named, without its password) could not be reached, read or written.
    #[error("the agent job store {store} failed: {cause}")]
    Shared {
        /// The store, as `postgres://user@host:port/db`.
        store: String,
        /// What went wrong.
        cause: String,
    },
    /// No job has this id in the store.
    #[error("no job `{job_id}` in {store}")]
    NoSuchJob {
        /// The id asked for.
        job_id: String,
        /// The store searched.
        store: String,
    },
    /// The job is still being loaded from its CSV (or its loading failed).
    #[error(
        "job `{0}` is still loading its rows; try again once `keel agent-job start` has finished"
    )]
    Loading(String),
    /// The results file could not be written.
    #[error("cannot write {path}: {cause}")]
    WriteCsv {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        cause: String,
    },
}

impl From<rusqlite::Error> for JobError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Store(err.to_string())
    }
}
