//! The embedded job store: a SQLite file (`<keel home>/agent_jobs.sqlite3` by default),
//! written as rows change, so a job that was cut short resumes without redoing finished
//! rows, and the processes of one host can work one job together.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, params};

use super::JobError;
use super::job_store::{
    ClaimedItem, ExportRow, ItemEnd, JobCounts, JobRecord, JobStore, NewJob, NewRow, ReportOutcome,
    RunningItem, now,
};

/// The file name in the Keel home.
pub const SQLITE_FILE_NAME: &str = "agent_jobs.sqlite3";

/// The tables as the first release wrote them; migrations take them on from there.
const SCHEMA_V0: &str = "
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

/// Schema migrations after [`SCHEMA_V0`], applied in order; `PRAGMA user_version` counts
/// how many a file has.
const MIGRATIONS: &[&str] = &[
    // 1: leases, so several processes can work one job.
    "ALTER TABLE agent_job_items ADD COLUMN lease_holder TEXT;
     ALTER TABLE agent_job_items ADD COLUMN lease_expires_ms INTEGER;",
    // 2: the span of the tool call that started a job, so its workers' turns continue it.
    "ALTER TABLE agent_jobs ADD COLUMN trace_context TEXT;",
];

/// The job database on one host; cheap to clone (one connection behind a lock).
#[derive(Clone)]
pub struct SqliteJobStore {
    conn: Arc<Mutex<Connection>>,
    /// The database file, named in every failure.
    path: Arc<PathBuf>,
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

/// Milliseconds since the Unix epoch, the clock leases are kept in.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn json_error(err: serde_json::Error) -> JobError {
    JobError::Store(err.to_string())
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn index(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn job_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<JobRecordRow> {
    Ok(JobRecordRow {
        id: row.get(0)?,
        headers: row.get(1)?,
        total: row.get(2)?,
        instruction: row.get(3)?,
        output: row.get(4)?,
        schema: row.get(5)?,
        status: row.get(6)?,
        trace_context: row.get(7)?,
    })
}

/// A job row as read, before its JSON columns are decoded.
struct JobRecordRow {
    id: String,
    headers: String,
    total: i64,
    instruction: String,
    output: String,
    schema: Option<String>,
    status: String,
    trace_context: Option<String>,
}

impl JobRecordRow {
    fn decode(self) -> Result<JobRecord, JobError> {
        Ok(JobRecord {
            id: self.id,
            headers: serde_json::from_str(&self.headers).map_err(json_error)?,
            total: u64::try_from(self.total).unwrap_or_default(),
            instruction: self.instruction,
            output_csv_path: PathBuf::from(self.output),
            output_schema: self.schema.and_then(|s| serde_json::from_str(&s).ok()),
            status: self.status,
            trace_context: self.trace_context,
        })
    }
}

const JOB_COLUMNS: &str =
    "id, headers_json, total, instruction, output_csv_path, output_schema, status, trace_context";

/// Brings a file to the current schema, one migration at a time.
fn migrate(conn: &mut Connection) -> Result<(), JobError> {
    // Under the write lock from the start, and the version read inside it: processes
    // opening an old file together migrate it once.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(SCHEMA_V0)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    for (done, migration) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        tx.execute_batch(migration)?;
        tx.pragma_update(None, "user_version", done + 1)?;
    }
    tx.commit()?;
    Ok(())
}

impl SqliteJobStore {
    /// Opens (creating) the job database in `dir` (the configured `sqlite_home`).
    pub async fn open(dir: &Path) -> Result<Self, JobError> {
        Self::open_file(&dir.join(SQLITE_FILE_NAME)).await
    }

    /// Opens (creating) the job database at `file`.
    pub async fn open_file(file: &Path) -> Result<Self, JobError> {
        let path = Arc::new(file.to_path_buf());
        let opened = path.clone();
        let conn = tokio::task::spawn_blocking(move || -> Result<Connection, JobError> {
            if let Some(dir) = opened.parent().filter(|dir| !dir.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|err| JobError::Store(err.to_string()))?;
            }
            let mut conn = Connection::open(opened.as_path())?;
            conn.busy_timeout(Duration::from_secs(10))?;
            // WAL with NORMAL sync: every committed change survives the process being
            // killed, and writers do not block readers.
            conn.pragma_update(None, "journal_mode", "WAL")?;
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            migrate(&mut conn)?;
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

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection off the async threads.
    async fn call<T: Send + 'static>(
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
}

impl JobStore for SqliteJobStore {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn begin_job(&self, job: NewJob) -> BoxFuture<'_, Result<(), JobError>> {
        Box::pin(self.call(move |conn| {
            let headers = serde_json::to_string(&job.headers).map_err(json_error)?;
            conn.execute(
                "INSERT INTO agent_jobs (id, resume_key, status, csv_path, output_csv_path,
                     instruction, output_schema, headers_json, total, created_at, trace_context)
                 VALUES (?1, ?2, 'loading', ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9)",
                params![
                    job.id,
                    job.resume_key,
                    job.csv_path.display().to_string(),
                    job.output_csv_path.display().to_string(),
                    job.instruction,
                    job.output_schema.as_ref().map(ToString::to_string),
                    headers,
                    now(),
                    job.trace_context
                ],
            )?;
            Ok(())
        }))
    }

    fn add_rows<'a>(
        &'a self,
        job_id: &'a str,
        rows: Vec<NewRow>,
    ) -> BoxFuture<'a, Result<(), JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let tx = conn.transaction()?;
            {
                let mut insert = tx.prepare(
                    "INSERT INTO agent_job_items (job_id, item_id, row_index, source_id, row_json, status)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
                )?;
                for row in rows {
                    let fields = serde_json::to_string(&row.fields).map_err(json_error)?;
                    insert.execute(params![
                        job_id,
                        row.item_id,
                        index(row.row_index),
                        row.source_id,
                        fields
                    ])?;
                }
            }
            tx.commit()?;
            Ok(())
        }))
    }

    fn commit_job<'a>(
        &'a self,
        job_id: &'a str,
        total: u64,
    ) -> BoxFuture<'a, Result<(), JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            conn.execute(
                "UPDATE agent_jobs SET status = 'running', total = ?2 WHERE id = ?1",
                params![job_id, index(total)],
            )?;
            Ok(())
        }))
    }

    fn discard_job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<(), JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let tx = conn.transaction()?;
            tx.execute(
                "DELETE FROM agent_job_items WHERE job_id = ?1",
                params![job_id],
            )?;
            tx.execute("DELETE FROM agent_jobs WHERE id = ?1", params![job_id])?;
            tx.commit()?;
            Ok(())
        }))
    }

    fn job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<Option<JobRecord>, JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            conn.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM agent_jobs WHERE id = ?1"),
                params![job_id],
                job_record,
            )
            .optional()?
            .map(JobRecordRow::decode)
            .transpose()
        }))
    }

    fn find_resumable<'a>(
        &'a self,
        resume_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<JobRecord>, JobError>> {
        let resume_key = resume_key.to_string();
        Box::pin(self.call(move |conn| {
            conn.query_row(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM agent_jobs WHERE resume_key = ?1 AND status = 'running'
                     ORDER BY created_at DESC LIMIT 1"
                ),
                params![resume_key],
                job_record,
            )
            .optional()?
            .map(JobRecordRow::decode)
            .transpose()
        }))
    }

    fn claim_next<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<ClaimedItem>, JobError>> {
        let (job_id, holder) = (job_id.to_string(), holder.to_string());
        Box::pin(self.call(move |conn| {
            let now = now_ms();
            // Under the write lock from the start (IMMEDIATE), so two processes never claim
            // the same row. A row whose lease ran out goes first; each lookup walks the
            // (job, status, row) index, so a claim costs the same at any job size.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let next = |status_test: &str| {
                tx.query_row(
                    &format!(
                        "SELECT item_id FROM agent_job_items WHERE job_id = ?1 AND {status_test}
                         ORDER BY row_index LIMIT 1"
                    ),
                    params![job_id, now],
                    |row| row.get::<_, String>(0),
                )
                .optional()
            };
            let item = match next("status = 'running' AND COALESCE(lease_expires_ms, 0) < ?2")? {
                Some(item) => Some(item),
                None => next("status = 'pending' AND ?2 = ?2")?,
            };
            let claimed = match item {
                None => None,
                Some(item_id) => Some(tx.query_row(
                    "UPDATE agent_job_items
                     SET status = 'running', attempt_count = attempt_count + 1,
                         lease_holder = ?3, lease_expires_ms = ?4
                     WHERE job_id = ?1 AND item_id = ?2
                     RETURNING item_id, row_json, attempt_count",
                    params![job_id, item_id, holder, now.saturating_add(millis(lease))],
                    |row| {
                        Ok((
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                        ))
                    },
                )?),
            };
            tx.commit()?;
            claimed
                .map(|(item_id, row_json, attempts)| {
                    Ok(ClaimedItem {
                        item_id,
                        fields: serde_json::from_str(&row_json).map_err(json_error)?,
                        attempt: u32::try_from(attempts).unwrap_or(u32::MAX),
                    })
                })
                .transpose()
        }))
    }

    fn renew_leases<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<u64, JobError>> {
        let (job_id, holder) = (job_id.to_string(), holder.to_string());
        Box::pin(self.call(move |conn| {
            let n = conn.execute(
                "UPDATE agent_job_items SET lease_expires_ms = ?3
                 WHERE job_id = ?1 AND lease_holder = ?2 AND status = 'running'",
                params![job_id, holder, now_ms().saturating_add(millis(lease))],
            )?;
            Ok(count(n))
        }))
    }

    fn release<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<u64, JobError>> {
        let (job_id, holder) = (job_id.to_string(), holder.to_string());
        Box::pin(self.call(move |conn| {
            let n = conn.execute(
                "UPDATE agent_job_items SET status = 'pending', lease_holder = NULL,
                     lease_expires_ms = NULL
                 WHERE job_id = ?1 AND lease_holder = ?2 AND status = 'running'",
                params![job_id, holder],
            )?;
            Ok(count(n))
        }))
    }

    fn requeue_running<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<u64, JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let n = conn.execute(
                "UPDATE agent_job_items SET status = 'pending', lease_holder = NULL,
                     lease_expires_ms = NULL
                 WHERE job_id = ?1 AND status = 'running'",
                params![job_id],
            )?;
            Ok(count(n))
        }))
    }

    fn record_report<'a>(
        &'a self,
        job_id: &'a str,
        item_id: &'a str,
        result: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<ReportOutcome, JobError>> {
        let (job_id, item_id, result) =
            (job_id.to_string(), item_id.to_string(), result.to_string());
        Box::pin(self.call(move |conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
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
                     last_error = NULL, lease_holder = NULL, lease_expires_ms = NULL
                 WHERE job_id = ?1 AND item_id = ?2",
                params![job_id, item_id, result, at],
            )?;
            tx.commit()?;
            Ok(ReportOutcome { reported_at: at })
        }))
    }

    fn finish_unreported<'a>(
        &'a self,
        job_id: &'a str,
        item_id: &'a str,
        holder: &'a str,
        attempt: u32,
        end: ItemEnd,
        error: &'a str,
    ) -> BoxFuture<'a, Result<bool, JobError>> {
        let (job_id, item_id, holder, error) = (
            job_id.to_string(),
            item_id.to_string(),
            holder.to_string(),
            error.to_string(),
        );
        Box::pin(self.call(move |conn| {
            conn.execute(
                "UPDATE agent_job_items
                 SET status = ?4, last_error = ?5, completed_at = ?6, lease_holder = NULL,
                     lease_expires_ms = NULL
                 WHERE job_id = ?1 AND item_id = ?2 AND lease_holder = ?3
                     AND attempt_count = ?7 AND result_json IS NULL",
                params![job_id, item_id, holder, end.as_str(), error, now(), attempt],
            )?;
            let reported = conn
                .query_row(
                    "SELECT result_json IS NOT NULL FROM agent_job_items
                     WHERE job_id = ?1 AND item_id = ?2",
                    params![job_id, item_id],
                    |row| row.get::<_, bool>(0),
                )
                .optional()?;
            Ok(reported.unwrap_or(false))
        }))
    }

    fn cancel_pending<'a>(
        &'a self,
        job_id: &'a str,
        why: &'a str,
    ) -> BoxFuture<'a, Result<u64, JobError>> {
        let (job_id, why) = (job_id.to_string(), why.to_string());
        Box::pin(self.call(move |conn| {
            let n = conn.execute(
                "UPDATE agent_job_items SET status = 'cancelled', last_error = ?2, completed_at = ?3
                 WHERE job_id = ?1 AND status = 'pending'",
                params![job_id, why, now()],
            )?;
            Ok(count(n))
        }))
    }

    fn counts<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<JobCounts, JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let mut statement = conn.prepare(
                "SELECT status, COUNT(*) FROM agent_job_items WHERE job_id = ?1 GROUP BY status",
            )?;
            let rows = statement.query_map(params![job_id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            let mut counts = JobCounts::default();
            for row in rows {
                let (status, n) = row?;
                counts.tally(&status, u64::try_from(n).unwrap_or_default());
            }
            Ok(counts)
        }))
    }

    fn running_items<'a>(
        &'a self,
        job_id: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<RunningItem>, JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let now = now_ms();
            let mut statement = conn.prepare(
                "SELECT item_id, COALESCE(lease_holder, ''), attempt_count,
                        COALESCE(lease_expires_ms, 0)
                 FROM agent_job_items WHERE job_id = ?1 AND status = 'running'
                 ORDER BY row_index LIMIT ?2",
            )?;
            let rows = statement.query_map(params![job_id, index(count(limit))], |row| {
                Ok(RunningItem {
                    item_id: row.get(0)?,
                    holder: row.get(1)?,
                    attempt: u32::try_from(row.get::<_, i64>(2)?).unwrap_or(u32::MAX),
                    lease_left_ms: row.get::<_, i64>(3)?.saturating_sub(now),
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        }))
    }

    fn set_job_status<'a>(
        &'a self,
        job_id: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), JobError>> {
        let (job_id, status) = (job_id.to_string(), status.to_string());
        Box::pin(self.call(move |conn| {
            conn.execute(
                "UPDATE agent_jobs SET status = ?2, finished_at = ?3
                 WHERE id = ?1 AND status = 'running'",
                params![job_id, status, now()],
            )?;
            Ok(())
        }))
    }

    fn failures<'a>(
        &'a self,
        job_id: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let mut statement = conn.prepare(
                "SELECT item_id, COALESCE(last_error, '') FROM agent_job_items
                 WHERE job_id = ?1 AND status = 'failed' ORDER BY row_index LIMIT ?2",
            )?;
            let rows = statement.query_map(params![job_id, index(count(limit))], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        }))
    }

    fn export_page<'a>(
        &'a self,
        job_id: &'a str,
        after: Option<u64>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ExportRow>, JobError>> {
        let job_id = job_id.to_string();
        Box::pin(self.call(move |conn| {
            let mut statement = conn.prepare(
                "SELECT row_json, item_id, row_index, COALESCE(source_id, ''), status,
                        attempt_count, COALESCE(last_error, ''), COALESCE(result_json, ''),
                        COALESCE(reported_at, ''), COALESCE(completed_at, '')
                 FROM agent_job_items WHERE job_id = ?1 AND row_index > ?2
                 ORDER BY row_index LIMIT ?3",
            )?;
            let after = after.map_or(-1, index);
            let mut rows = statement.query(params![job_id, after, index(count(limit))])?;
            let mut page = Vec::new();
            while let Some(row) = rows.next()? {
                page.push(ExportRow {
                    fields: serde_json::from_str(&row.get::<_, String>(0)?).map_err(json_error)?,
                    item_id: row.get(1)?,
                    row_index: u64::try_from(row.get::<_, i64>(2)?).unwrap_or_default(),
                    source_id: row.get(3)?,
                    status: row.get(4)?,
                    attempt_count: u32::try_from(row.get::<_, i64>(5)?).unwrap_or(u32::MAX),
                    last_error: row.get(6)?,
                    result_json: row.get(7)?,
                    reported_at: row.get(8)?,
                    completed_at: row.get(9)?,
                });
            }
            Ok(page)
        }))
    }
}
