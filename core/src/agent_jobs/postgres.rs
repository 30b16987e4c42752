//! The shared job store: PostgreSQL, so worker processes on any number of hosts work one job.
//! Rows are claimed with `FOR UPDATE SKIP LOCKED` under leases kept on the database's clock
//! (hosts' clocks never need to agree), and a result is recorded once, under the row's lock.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio_postgres::Row;

use super::JobError;
use super::job_store::{
    ClaimedItem, ExportRow, ItemEnd, JobCounts, JobRecord, JobStore, NewJob, NewRow, ReportOutcome,
    RunningItem, now,
};
use crate::postgres::{ConnInfo, Lookup, PostgresError, SharedPool};

/// A job store in a PostgreSQL database, shared by every worker that connects to it.
#[derive(Clone)]
pub struct PostgresJobStore {
    shared: SharedPool,
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn index(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn json_error(err: serde_json::Error) -> JobError {
    JobError::Store(err.to_string())
}

const JOB_COLUMNS: &str =
    "id, headers_json, total, instruction, output_csv_path, output_schema, status, trace_context";

fn job_record(row: &Row) -> Result<JobRecord, JobError> {
    let headers: String = row.try_get(1)?;
    let schema: Option<String> = row.try_get(5)?;
    Ok(JobRecord {
        id: row.try_get(0)?,
        headers: serde_json::from_str(&headers).map_err(json_error)?,
        total: u64::try_from(row.try_get::<_, i64>(2)?).unwrap_or_default(),
        instruction: row.try_get(3)?,
        output_csv_path: std::path::PathBuf::from(row.try_get::<_, String>(4)?),
        output_schema: schema.and_then(|s| serde_json::from_str(&s).ok()),
        status: row.try_get(6)?,
        trace_context: row.try_get(7)?,
    })
}

impl PostgresJobStore {
    /// Connects to `store` (a `postgres://` URL or libpq `key=value` string, completed by
    /// `PG*` variables, a service file and the password file as libpq would) and brings its
    /// schema up to date.
    pub async fn connect(store: &str) -> Result<Self, JobError> {
        let info = ConnInfo::resolve(store, &Lookup::process())?;
        Self::connect_with(&info).await
    }

    pub(crate) async fn connect_with(info: &ConnInfo) -> Result<Self, JobError> {
        Ok(Self {
            shared: SharedPool::connect(info).await?,
        })
    }

    /// Runs one statement, returning the rows.
    async fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>, JobError> {
        Ok(self.shared.query(sql, params).await?)
    }

    /// Runs one statement, returning the rows it changed.
    async fn execute(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<u64, JobError> {
        Ok(self.shared.execute(sql, params).await?)
    }

    /// Claims the first row passing `test` (pending, or running with a lapsed lease).
    async fn claim_where(
        &self,
        test: &str,
        job_id: &str,
        holder: &str,
        lease: Duration,
    ) -> Result<Option<ClaimedItem>, JobError> {
        let sql = format!(
            "WITH next AS (
                 SELECT item_id FROM agent_job_items WHERE job_id = $1 AND {test}
                 ORDER BY row_index LIMIT 1 FOR UPDATE SKIP LOCKED)
             UPDATE agent_job_items AS i
             SET status = 'running', attempt_count = i.attempt_count + 1, lease_holder = $2,
                 lease_expires_at = now() + $3::bigint * interval '1 millisecond'
             FROM next WHERE i.job_id = $1 AND i.item_id = next.item_id
             RETURNING i.item_id, i.row_json, i.attempt_count"
        );
        let rows = self
            .query(&sql, &[&job_id, &holder, &millis(lease)])
            .await?;
        rows.first()
            .map(|row| {
                let row_json: String = row.try_get(1)?;
                Ok(ClaimedItem {
                    item_id: row.try_get(0)?,
                    fields: serde_json::from_str(&row_json).map_err(json_error)?,
                    attempt: u32::try_from(row.try_get::<_, i32>(2)?).unwrap_or_default(),
                })
            })
            .transpose()
    }
}

impl From<tokio_postgres::Error> for JobError {
    fn from(err: tokio_postgres::Error) -> Self {
        PostgresError::from(err).into()
    }
}

impl From<PostgresError> for JobError {
    fn from(err: PostgresError) -> Self {
        match err {
            PostgresError::BadConnInfo(cause) => Self::BadStore(cause),
            PostgresError::Server(cause) => Self::Store(cause),
            PostgresError::Named { store, cause } => Self::Shared { store, cause },
        }
    }
}

impl JobStore for PostgresJobStore {
    fn describe(&self) -> String {
        self.shared.shown().to_string()
    }

    fn begin_job(&self, job: NewJob) -> BoxFuture<'_, Result<(), JobError>> {
        Box::pin(async move {
            let headers = serde_json::to_string(&job.headers).map_err(json_error)?;
            let schema = job.output_schema.as_ref().map(ToString::to_string);
            self.execute(
                "INSERT INTO agent_jobs (id, resume_key, status, csv_path, output_csv_path,
                     instruction, output_schema, headers_json, total, created_at, trace_context)
                 VALUES ($1, $2, 'loading', $3, $4, $5, $6, $7, 0, $8, $9)",
                &[
                    &job.id,
                    &job.resume_key,
                    &job.csv_path.display().to_string(),
                    &job.output_csv_path.display().to_string(),
                    &job.instruction,
                    &schema,
                    &headers,
                    &now(),
                    &job.trace_context,
                ],
            )
            .await?;
            Ok(())
        })
    }

    fn add_rows<'a>(
        &'a self,
        job_id: &'a str,
        rows: Vec<NewRow>,
    ) -> BoxFuture<'a, Result<(), JobError>> {
        Box::pin(async move {
            let mut item_ids = Vec::with_capacity(rows.len());
            let mut indexes = Vec::with_capacity(rows.len());
            let mut source_ids = Vec::with_capacity(rows.len());
            let mut fields = Vec::with_capacity(rows.len());
            for row in rows {
                fields.push(serde_json::to_string(&row.fields).map_err(json_error)?);
                item_ids.push(row.item_id);
                indexes.push(index(row.row_index));
                source_ids.push(row.source_id);
            }
            // One statement per batch: the arrays are unnested server-side.
            self.execute(
                "INSERT INTO agent_job_items (job_id, item_id, row_index, source_id, row_json, status)
                 SELECT $1, item_id, row_index, source_id, row_json, 'pending'
                 FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[])
                     AS r(item_id, row_index, source_id, row_json)",
                &[&job_id, &item_ids, &indexes, &source_ids, &fields],
            )
            .await?;
            Ok(())
        })
    }

    fn commit_job<'a>(
        &'a self,
        job_id: &'a str,
        total: u64,
    ) -> BoxFuture<'a, Result<(), JobError>> {
        Box::pin(async move {
            self.execute(
                "UPDATE agent_jobs SET status = 'running', total = $2 WHERE id = $1",
                &[&job_id, &index(total)],
            )
            .await?;
            Ok(())
        })
    }

    fn discard_job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<(), JobError>> {
        Box::pin(async move {
            self.execute("DELETE FROM agent_jobs WHERE id = $1", &[&job_id])
                .await?;
            Ok(())
        })
    }

    fn job<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<Option<JobRecord>, JobError>> {
        Box::pin(async move {
            let rows = self
                .query(
                    &format!("SELECT {JOB_COLUMNS} FROM agent_jobs WHERE id = $1"),
                    &[&job_id],
                )
                .await?;
            rows.first().map(job_record).transpose()
        })
    }

    fn find_resumable<'a>(
        &'a self,
        resume_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<JobRecord>, JobError>> {
        Box::pin(async move {
            let rows = self
                .query(
                    &format!(
                        "SELECT {JOB_COLUMNS} FROM agent_jobs
                         WHERE resume_key = $1 AND status = 'running'
                         ORDER BY created_at DESC LIMIT 1"
                    ),
                    &[&resume_key],
                )
                .await?;
            rows.first().map(job_record).transpose()
        })
    }

    fn claim_next<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<ClaimedItem>, JobError>> {
        Box::pin(async move {
            // Rows whose holder stopped renewing go first; each lookup walks the
            // (job, status, row) index, so a claim costs the same at any job size.
            if let Some(item) = self
                .claim_where(
                    "status = 'running' AND lease_expires_at < now()",
                    job_id,
                    holder,
                    lease,
                )
                .await?
            {
                return Ok(Some(item));
            }
            self.claim_where("status = 'pending'", job_id, holder, lease)
                .await
        })
    }

    fn renew_leases<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<u64, JobError>> {
        Box::pin(async move {
            self.execute(
                "UPDATE agent_job_items
             SET lease_expires_at = now() + $3::bigint * interval '1 millisecond'
             WHERE job_id = $1 AND lease_holder = $2 AND status = 'running'",
                &[&job_id, &holder, &millis(lease)],
            )
            .await
        })
    }

    fn release<'a>(
        &'a self,
        job_id: &'a str,
        holder: &'a str,
    ) -> BoxFuture<'a, Result<u64, JobError>> {
        Box::pin(async move {
            self.execute(
                "UPDATE agent_job_items SET status = 'pending', lease_holder = NULL,
                 lease_expires_at = NULL
             WHERE job_id = $1 AND lease_holder = $2 AND status = 'running'",
                &[&job_id, &holder],
            )
            .await
        })
    }

    fn requeue_running<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<u64, JobError>> {
        Box::pin(async move {
            self.execute(
                "UPDATE agent_job_items SET status = 'pending', lease_holder = NULL,
                 lease_expires_at = NULL
             WHERE job_id = $1 AND status = 'running'",
                &[&job_id],
            )
            .await
        })
    }

    fn record_report<'a>(
        &'a self,
        job_id: &'a str,
        item_id: &'a str,
        result: &'a serde_json::Value,
    ) -> BoxFuture<'a, Result<ReportOutcome, JobError>> {
        Box::pin(async move {
            let at = now();
            let result = result.to_string();
            // The row lock taken by the UPDATE makes the first report the only one.
            let updated = self
                .execute(
                    "UPDATE agent_job_items
                     SET status = 'completed', result_json = $3, reported_at = $4,
                         completed_at = $4, last_error = NULL, lease_holder = NULL,
                         lease_expires_at = NULL
                     WHERE job_id = $1 AND item_id = $2 AND result_json IS NULL",
                    &[&job_id, &item_id, &result, &at],
                )
                .await?;
            if updated == 1 {
                return Ok(ReportOutcome { reported_at: at });
            }
            let rows = self
                .query(
                    "SELECT reported_at FROM agent_job_items WHERE job_id = $1 AND item_id = $2",
                    &[&job_id, &item_id],
                )
                .await?;
            match rows.first() {
                None => Err(JobError::UnknownItem(item_id.to_string())),
                Some(row) => Err(JobError::AlreadyReported {
                    item_id: item_id.to_string(),
                    reported_at: row.try_get::<_, Option<String>>(0)?.unwrap_or_default(),
                }),
            }
        })
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
        Box::pin(async move {
            self.execute(
                "UPDATE agent_job_items
                 SET status = $4, last_error = $5, completed_at = $6, lease_holder = NULL,
                     lease_expires_at = NULL
                 WHERE job_id = $1 AND item_id = $2 AND lease_holder = $3
                     AND attempt_count = $7 AND result_json IS NULL",
                &[
                    &job_id,
                    &item_id,
                    &holder,
                    &end.as_str(),
                    &error,
                    &now(),
                    &i32::try_from(attempt).unwrap_or(i32::MAX),
                ],
            )
            .await?;
            let rows = self
                .query(
                    "SELECT result_json IS NOT NULL FROM agent_job_items
                     WHERE job_id = $1 AND item_id = $2",
                    &[&job_id, &item_id],
                )
                .await?;
            Ok(match rows.first() {
                Some(row) => row.try_get::<_, bool>(0)?,
                None => false,
            })
        })
    }

    fn cancel_pending<'a>(
        &'a self,
        job_id: &'a str,
        why: &'a str,
    ) -> BoxFuture<'a, Result<u64, JobError>> {
        Box::pin(async move {
            self.execute(
                "UPDATE agent_job_items SET status = 'cancelled', last_error = $2,
                     completed_at = $3
                 WHERE job_id = $1 AND status = 'pending'",
                &[&job_id, &why, &now()],
            )
            .await
        })
    }

    fn counts<'a>(&'a self, job_id: &'a str) -> BoxFuture<'a, Result<JobCounts, JobError>> {
        Box::pin(async move {
            let rows = self
                .query(
                    "SELECT status, COUNT(*) FROM agent_job_items WHERE job_id = $1
                     GROUP BY status",
                    &[&job_id],
                )
                .await?;
            let mut counts = JobCounts::default();
            for row in rows {
                let status: String = row.try_get(0)?;
                let n: i64 = row.try_get(1)?;
                counts.tally(&status, u64::try_from(n).unwrap_or_default());
            }
            Ok(counts)
        })
    }

    fn running_items<'a>(
        &'a self,
        job_id: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<RunningItem>, JobError>> {
        Box::pin(async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = self
                .query(
                    "SELECT item_id, COALESCE(lease_holder, ''), attempt_count,
                         COALESCE((EXTRACT(EPOCH FROM lease_expires_at - now()) * 1000)::bigint, 0)
                     FROM agent_job_items WHERE job_id = $1 AND status = 'running'
                     ORDER BY row_index LIMIT $2",
                    &[&job_id, &limit],
                )
                .await?;
            rows.iter()
                .map(|row| {
                    Ok(RunningItem {
                        item_id: row.try_get(0)?,
                        holder: row.try_get(1)?,
                        attempt: u32::try_from(row.try_get::<_, i32>(2)?).unwrap_or_default(),
                        lease_left_ms: row.try_get(3)?,
                    })
                })
                .collect()
        })
    }

    fn set_job_status<'a>(
        &'a self,
        job_id: &'a str,
        status: &'a str,
    ) -> BoxFuture<'a, Result<(), JobError>> {
        Box::pin(async move {
            self.execute(
                "UPDATE agent_jobs SET status = $2, finished_at = $3
                 WHERE id = $1 AND status = 'running'",
                &[&job_id, &status, &now()],
            )
            .await?;
            Ok(())
        })
    }

    fn failures<'a>(
        &'a self,
        job_id: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, JobError>> {
        Box::pin(async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = self
                .query(
                    "SELECT item_id, COALESCE(last_error, '') FROM agent_job_items
                     WHERE job_id = $1 AND status = 'failed' ORDER BY row_index LIMIT $2",
                    &[&job_id, &limit],
                )
                .await?;
            rows.iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect()
        })
    }

    fn export_page<'a>(
        &'a self,
        job_id: &'a str,
        after: Option<u64>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ExportRow>, JobError>> {
        Box::pin(async move {
            let after = after.map_or(-1, index);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = self
                .query(
                    "SELECT row_json, item_id, row_index, COALESCE(source_id, ''), status,
                         attempt_count, COALESCE(last_error, ''), COALESCE(result_json, ''),
                         COALESCE(reported_at, ''), COALESCE(completed_at, '')
                     FROM agent_job_items WHERE job_id = $1 AND row_index > $2
                     ORDER BY row_index LIMIT $3",
                    &[&job_id, &after, &limit],
                )
                .await?;
            rows.iter()
                .map(|row| {
                    let fields: String = row.try_get(0)?;
                    Ok(ExportRow {
                        fields: serde_json::from_str(&fields).map_err(json_error)?,
                        item_id: row.try_get(1)?,
                        row_index: u64::try_from(row.try_get::<_, i64>(2)?).unwrap_or_default(),
                        source_id: row.try_get(3)?,
                        status: row.try_get(4)?,
                        attempt_count: u32::try_from(row.try_get::<_, i32>(5)?).unwrap_or_default(),
                        last_error: row.try_get(6)?,
                        result_json: row.try_get(7)?,
                        reported_at: row.try_get(8)?,
                        completed_at: row.try_get(9)?,
                    })
                })
                .collect()
        })
    }
}
