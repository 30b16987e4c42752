//! Writing a job's results CSV: the input columns, then what became of each row, one line
//! per input row in input order.

use std::path::Path;

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

/// Rows read from the store at a time.
const PAGE: usize = 1000;

/// Writes the results of `job_id` to `path` (through a temporary file, so a reader never
/// sees half a file), page by page from the store; returns the rows written.
pub async fn export_results(
    store: &dyn JobStore,
    job_id: &str,
    headers: &[String],
    path: &Path,
) -> Result<u64, JobError> {
    let write_error = |cause: String| JobError::WriteCsv {
        path: path.to_path_buf(),
        cause,
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
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
    let mut after = None;
    let mut written = 0u64;
    loop {
        let page = store.export_page(job_id, after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.row_index);
        let full = page.len() == PAGE;
        for row in page {
            let record = row.fields.into_iter().chain([
                job_id.to_string(),
                row.item_id,
                row.row_index.to_string(),
                row.source_id,
                row.status,
                row.attempt_count.to_string(),
                row.last_error,
                row.result_json,
                row.reported_at,
                row.completed_at,
            ]);
            writer
                .write_record(record)
                .map_err(|err| write_error(err.to_string()))?;
            written += 1;
        }
        if !full {
            break;
        }
    }
    writer.flush().map_err(|err| write_error(err.to_string()))?;
    drop(writer);
    std::fs::rename(&partial, path).map_err(|err| write_error(err.to_string()))?;
    Ok(written)
}
