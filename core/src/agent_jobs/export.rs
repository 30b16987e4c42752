//! Writing a job's results CSV: the input columns, then what became of each row, one line
//! per input row in input order.

use std::path::Path;

use rusqlite::params;

use super::{JobError, JobStore};

/// The columns after the input's, as Codex writes them.
pub(crate) const RESULT_COLUMNS: [&str; 10] = [
    "job_id",
    "item_id",
    "row_index",
    "source_id",
    "status",
    "attempt_count",
    "last_error",
    "result_json",
    "reported_at",
    "completed_at",
];

/// Writes the results of `job_id` to `path` (through a temporary file, so a reader never
/// sees half a file), streaming the rows from the store.
pub(crate) async fn export_results(
    store: &JobStore,
    job_id: &str,
    headers: &[String],
    path: &Path,
) -> Result<(), JobError> {
    let (job_id, headers, path) = (job_id.to_string(), headers.to_vec(), path.to_path_buf());
    store
        .call(move |conn| {
            let write_error = |cause: String| JobError::WriteCsv {
                path: path.clone(),
                cause,
            };
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|err| write_error(err.to_string()))?;
            }
            let partial = path.with_extension("csv.partial");
            let mut writer =
                csv::Writer::from_path(&partial).map_err(|err| write_error(err.to_string()))?;
            let header = headers
                .iter()
                .map(String::as_str)
                .chain(RESULT_COLUMNS.iter().copied());
            writer
                .write_record(header)
                .map_err(|err| write_error(err.to_string()))?;
            let mut statement = conn.prepare(
                "SELECT row_json, item_id, row_index, COALESCE(source_id, ''), status,
                        attempt_count, COALESCE(last_error, ''), COALESCE(result_json, ''),
                        COALESCE(reported_at, ''), COALESCE(completed_at, '')
                 FROM agent_job_items WHERE job_id = ?1 ORDER BY row_index",
            )?;
            let mut rows = statement.query(params![job_id])?;
            while let Some(row) = rows.next()? {
                let fields: Vec<String> = serde_json::from_str(&row.get::<_, String>(0)?)
                    .map_err(|err| JobError::Store(err.to_string()))?;
                let record = fields.into_iter().chain([
                    job_id.clone(),
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?.to_string(),
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, i64>(5)?.to_string(),
                    row.get::<_, String>(6)?,
                    row.get::<_, String>(7)?,
                    row.get::<_, String>(8)?,
                    row.get::<_, String>(9)?,
                ]);
                writer
                    .write_record(record)
                    .map_err(|err| write_error(err.to_string()))?;
            }
            writer.flush().map_err(|err| write_error(err.to_string()))?;
            drop(writer);
            std::fs::rename(&partial, &path).map_err(|err| write_error(err.to_string()))?;
            Ok(())
        })
        .await
}
