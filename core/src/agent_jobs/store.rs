//! Job and row state in SQLite (`<keel home>/agent_jobs.sqlite3`), written as it changes, so
//! a job that was cut short resumes without redoing finished rows and memory never holds
//! more than the running rows.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::JobError;
use super::csv_input::CsvRows;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agent_jobs (
    id TEXT PRIMARY KEY,
    resume_key TEXT NOT NULL,
    status TEXT NOT NULL,
    csv_path TEXT NOT NULL,
    output_csv_path TEXT NOT NULL,
    instruction TEXT NOT NULL,
    output_schema TEXT,
    headers_json TEXT NOT NULL,
    total INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX IF NOT EXISTS agent_jobs_by_key ON agent_jobs(resume_key, status);
CREATE TABLE IF NOT EXISTS agent_job_items (
    job_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    row_index INTEGER NOT NULL,
    source_id TEXT,
    row_json TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    result_json TEXT,
    reported_at TEXT,
    completed_at TEXT,
    PRIMARY KEY (job_id, item_id)
);
CREATE INDEX IF NOT EXISTS agent_job_items_by_status ON agent_job_items(job_id, status, row_index);
CREATE INDEX IF NOT EXISTS agent_job_items_by_row ON agent_job_items(job_id, row_index);
";

/// The job database; cheap to clone (one connection behind a lock).
#[derive(Clone)]
pub(crate) struct JobStore {
    conn: Arc<Mutex<Connection>>,
    /// The database file, named in every failure.
    path: Arc<PathBuf>,
}

/// A job as stored.
#[derive(Debug, Clone)]
pub(crate) struct JobRecord {
    pub id: String,
    pub headers: Vec<String>,
    pub total: u64,
    pub instruction: String,
    pub output_csv_path: PathBuf,
    pub output_schema: Option<serde_json::Value>,
}

/// What a new job is made of (its rows come from the CSV).
pub(crate) struct NewJob {
    pub id: String,
    pub resume_key: String,
    pub csv_path: PathBuf,
    pub output_csv_path: PathBuf,
    pub instruction: String,
    pub output_schema: Option<serde_json::Value>,
}

/// A row handed to a worker.
#[derive(Debug, Clone)]
pub(crate) struct ClaimedItem {
    pub item_id: String,
    pub fields: Vec<String>,
}

/// Rows per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct JobCounts {
    pub total: u64,
    pub pending: u64,
    pub running: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
}

/// A report that was recorded.
#[derive(Debug, Clone)]
pub(crate) struct ReportOutcome {
    pub reported_at: String,
}

/// Timestamps as Codex writes them in results (`2026-11-23T22:24:21+00:00`).
fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// A database failure with the file named; every other problem unchanged.
fn named(path: &Path, err: JobError) -> JobError {
    match err {
        JobError::Store(cause) => JobError::Database {
            path: path.to_path_buf(),
            cause,
        },
        other => other,
    }
}

impl JobStore {
    /// Opens (creating) the job database in `dir` (the configured `sqlite_home`).
    pub(crate) async fn open(dir: &Path) -> Result<Self, JobError> {
        let path = Arc::new(dir.join("agent_jobs.sqlite3"));
        let home = dir.to_path_buf();
        let file = path.clone();
        let conn = tokio::task::spawn_blocking(move || -> Result<Connection, JobError> {
            std::fs::create_dir_all(&home).map_err(|err| JobError::Store(err.to_string()))?;
            let conn = Connection::open(file.as_path())?;
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            // WAL with NORMAL sync: every committed change survives the process being
            // killed, and writers do not block readers.
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            conn.execute_batch(SCHEMA)?;
            Ok(conn)
        })
        .await
        .map_err(|err| JobError::Store(err.to_string()))
        .and_then(|opened| opened)
        .map_err(|err| named(&path, err))?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path,
        })
    }

    /// Runs `f` on the connection off the async threads.
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, JobError> + Send + 'static,
    ) -> Result<T, JobError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut conn)
        })
        .await
        .map_err(|err| JobError::Store(err.to_string()))
        .and_then(|result| result)
        .map_err(|err| named(&self.path, err))
    }

    /// The unfinished job with this key (same CSV file, instruction and output), if any.
    pub(crate) async fn find_resumable(
        &self,
        resume_key: String,
    ) -> Result<Option<JobRecord>, JobError> {
        self.call(move |conn| {
            let row = conn
                .query_row(
                    "SELECT id, headers_json, total, instruction, output_csv_path, output_schema
                     FROM agent_jobs WHERE resume_key = ?1 AND status = 'running'
                     ORDER BY created_at DESC LIMIT 1",
                    params![resume_key],
                    |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                            row.get::<_, String>(3)?,
                            row.get::<_, String>(4)?,
                            row.get::<_, Option<String>>(5)?,
                        ))
                    },
                )
                .optional()?;
            row.map(|(id, headers, total, instruction, output, schema)| {
                Ok(JobRecord {
                    id,
                    headers: serde_json::from_str(&headers)
                        .map_err(|err| JobError::Store(err.to_string()))?,
                    total: u64::try_from(total).unwrap_or_default(),
                    instruction,
                    output_csv_path: PathBuf::from(output),
                    output_schema: schema.and_then(|s| serde_json::from_str(&s).ok()),
                })
            })
            .transpose()
        })
        .await
    }

    /// Creates a job with one pending item per row of `rows`, in one transaction (a bad row
    /// leaves nothing behind).
    pub(crate) async fn create_job(
        &self,
        job: NewJob,
        mut rows: CsvRows,
    ) -> Result<JobRecord, JobError> {
        self.call(move |conn| {
            let headers = rows.headers().to_vec();
            let headers_json =
                serde_json::to_string(&headers).map_err(|err| JobError::Store(err.to_string()))?;
            let tx = conn.transaction()?;
            let mut total = 0u64;
            {
                let mut insert = tx.prepare(
                    "INSERT INTO agent_job_items (job_id, item_id, row_index, source_id, row_json, status)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
                )?;
                while let Some(row) = rows.next_row()? {
                    let fields = serde_json::to_string(&row.fields)
                        .map_err(|err| JobError::Store(err.to_string()))?;
                    let index = i64::try_from(row.row_index).unwrap_or(i64::MAX);
                    let fallback = format!("row-{}", row.row_index + 1);
                    // The row's id column names the item, as in Codex; an empty or repeated
                    // value falls back to the row number.
                    let preferred = row.source_id.as_deref().filter(|id| !id.trim().is_empty());
                    let inserted = match preferred {
                        Some(id) => insert.execute(params![job.id, id, index, row.source_id, fields]),
                        None => insert.execute(params![job.id, fallback, index, row.source_id, fields]),
                    };
                    match inserted {
                        Err(rusqlite::Error::SqliteFailure(err, _))
                            if preferred.is_some()
                                && err.code == rusqlite::ErrorCode::ConstraintViolation =>
                        {
                            insert.execute(params![job.id, fallback, index, row.source_id, fields])?;
                        }
                        other => {
                            other?;
                        }
                    }
                    total += 1;
                }
            }
            if total == 0 {
                return Err(JobError::Empty(job.csv_path.clone()));
            }
            tx.execute(
                "INSERT INTO agent_jobs (id, resume_key, status, csv_path, output_csv_path,
                     instruction, output_schema, headers_json, total, created_at)
                 VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    job.id,
                    job.resume_key,
                    job.csv_path.display().to_string(),
                    job.output_csv_path.display().to_string(),
                    job.instruction,
                    job.output_schema.as_ref().map(ToString::to_string),
                    headers_json,
                    i64::try_from(total).unwrap_or(i64::MAX),
                    now()
                ],
            )?;
            tx.commit()?;
            Ok(JobRecord {
                id: job.id,
                headers,
                total,
                instruction: job.instruction,
                output_csv_path: job.output_csv_path,
                output_schema: job.output_schema,
            })
        })
        .await
    }

    /// Puts rows a previous run left running back in the queue; returns how many.
    pub(crate) async fn requeue_running(&self, job_id: String) -> Result<u64, JobError> {
        self.call(move |conn| {
            let n = conn.execute(
                "UPDATE agent_job_items SET status = 'pending'
                 WHERE job_id = ?1 AND status = 'running'",
                params![job_id],
            )?;
            Ok(n as u64)
        })
        .await
    }

    /// Marks the first pending row running (one more attempt) and returns it.
    pub(crate) async fn claim_next(&self, job_id: String) -> Result<Option<ClaimedItem>, JobError> {
        self.call(move |conn| {
            let claimed = conn
                .query_row(
                    "UPDATE agent_job_items
                     SET status = 'running', attempt_count = attempt_count + 1
                     WHERE job_id = ?1 AND item_id = (
                         SELECT item_id FROM agent_job_items
                         WHERE job_id = ?1 AND status = 'pending'
                         ORDER BY row_index LIMIT 1)
                     RETURNING item_id, row_json",
                    params![job_id],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
                )
                .optional()?;
            claimed
                .map(|(item_id, row_json)| {
                    Ok(ClaimedItem {
                        item_id,
                        fields: serde_json::from_str(&row_json)
                            .map_err(|err| JobError::Store(err.to_string()))?,
                    })
                })
                .transpose()
        })
        .await
    }

    /// Records a worker's result: the row is completed.
    pub(crate) async fn record_report(
        &self,
        job_id: &str,
        item_id: &str,
        result: &serde_json::Value,
    ) -> Result<ReportOutcome, JobError> {
        let (job_id, item_id, result) =
            (job_id.to_string(), item_id.to_string(), result.to_string());
        self.call(move |conn| {
            let tx = conn.transaction()?;
            let existing = tx
                .query_row(
                    "SELECT reported_at FROM agent_job_items WHERE job_id = ?1 AND item_id = ?2",
                    params![job_id, item_id],
                    |row| row.get::<_, Option<String>>(0),
                )
                .optional()?;
            match existing {
                None => return Err(JobError::UnknownItem(item_id)),
                Some(Some(reported_at)) => {
                    return Err(JobError::AlreadyReported {
                        item_id,
                        reported_at,
                    });
                }
                Some(None) => {}
            }
            let at = now();
            tx.execute(
                "UPDATE agent_job_items
                 SET status = 'completed', result_json = ?3, reported_at = ?4, completed_at = ?4,
                     last_error = NULL
                 WHERE job_id = ?1 AND item_id = ?2",
                params![job_id, item_id, result, at],
            )?;
            tx.commit()?;
            Ok(ReportOutcome { reported_at: at })
        })
        .await
    }

    /// Ends a row that did not report (`failed` or `cancelled`, with why); a row that
    /// reported meanwhile keeps its result. Returns whether the row had reported.
    pub(crate) async fn finish_unreported(
        &self,
        job_id: String,
        item_id: String,
        status: &'static str,
        error: String,
    ) -> Result<bool, JobError> {
        self.call(move |conn| {
            let changed = conn.execute(
                "UPDATE agent_job_items
                 SET status = ?3, last_error = ?4, completed_at = ?5
                 WHERE job_id = ?1 AND item_id = ?2 AND result_json IS NULL",
                params![job_id, item_id, status, error, now()],
            )?;
            Ok(changed == 0)
        })
        .await
    }

    /// Marks every pending row cancelled; returns how many.
    pub(crate) async fn cancel_pending(
        &self,
        job_id: String,
        why: String,
    ) -> Result<u64, JobError> {
        self.call(move |conn| {
            let n = conn.execute(
                "UPDATE agent_job_items SET status = 'cancelled', last_error = ?2, completed_at = ?3
                 WHERE job_id = ?1 AND status = 'pending'",
                params![job_id, why, now()],
            )?;
            Ok(n as u64)
        })
        .await
    }

    /// Rows per status.
    pub(crate) async fn counts(&self, job_id: String) -> Result<JobCounts, JobError> {
        self.call(move |conn| {
            let mut statement = conn.prepare(
                "SELECT status, COUNT(*) FROM agent_job_items WHERE job_id = ?1 GROUP BY status",
            )?;
            let mut counts = JobCounts::default();
            let rows = statement.query_map(params![job_id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            for row in rows {
                let (status, n) = row?;
                let n = u64::try_from(n).unwrap_or_default();
                counts.total += n;
                match status.as_str() {
                    "pending" => counts.pending = n,
                    "running" => counts.running = n,
                    "completed" => counts.completed = n,
                    "failed" => counts.failed = n,
                    _ => counts.cancelled += n,
                }
            }
            Ok(counts)
        })
        .await
    }

    /// Sets the job's status (`running`, `completed`, `cancelled`).
    pub(crate) async fn set_job_status(
        &self,
        job_id: String,
        status: &'static str,
    ) -> Result<(), JobError> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE agent_jobs SET status = ?2, finished_at = ?3 WHERE id = ?1",
                params![job_id, status, now()],
            )?;
            Ok(())
        })
        .await
    }

    /// The first `limit` rows that failed, with their errors, for the summary.
    pub(crate) async fn failures(
        &self,
        job_id: String,
        limit: usize,
    ) -> Result<Vec<(String, String)>, JobError> {
        self.call(move |conn| {
            let mut statement = conn.prepare(
                "SELECT item_id, COALESCE(last_error, '') FROM agent_job_items
                 WHERE job_id = ?1 AND status = 'failed' ORDER BY row_index LIMIT ?2",
            )?;
            let rows = statement.query_map(
                params![job_id, i64::try_from(limit).unwrap_or(i64::MAX)],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
            )?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }
}
