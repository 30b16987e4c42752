//! Reading a job's input CSV row by row (quoted fields, embedded newlines, a BOM), with
//! ragged or undecodable rows named in the error.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::JobError;

/// One data row.
pub(crate) struct CsvRow {
    /// 0-based position among the data rows.
    pub row_index: u64,
    /// The `id_column` value, when that column is given.
    pub source_id: Option<String>,
    /// The fields, one per header column.
    pub fields: Vec<String>,
}

/// A CSV file being read.
pub(crate) struct CsvRows {
    path: PathBuf,
    reader: csv::Reader<BufReader<File>>,
    headers: Vec<String>,
    id_index: Option<usize>,
    next_index: u64,
    record: csv::StringRecord,
}

impl CsvRows {
    /// Opens `path` and reads its header; `id_column` must be one of its columns.
    pub(crate) fn open(path: &Path, id_column: Option<&str>) -> Result<Self, JobError> {
        let read_error = |cause: String| JobError::ReadCsv {
            path: path.to_path_buf(),
            cause,
        };
        let file = File::open(path).map_err(|err| read_error(err.to_string()))?;
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .from_reader(BufReader::new(file));
        let headers: Vec<String> = reader
            .headers()
            .map_err(|err| read_error(format!("header: {err}")))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        if headers.is_empty() || headers.iter().all(String::is_empty) {
            return Err(JobError::Empty(path.to_path_buf()));
        }
        let id_index = match id_column {
            None => None,
            Some(column) => Some(headers.iter().position(|h| h == column).ok_or_else(|| {
                JobError::NoSuchColumn {
                    column: column.to_string(),
                    columns: headers.join(", "),
                }
            })?),
        };
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            headers,
            id_index,
            next_index: 0,
            record: csv::StringRecord::new(),
        })
    }

    /// The column names.
    pub(crate) fn headers(&self) -> &[String] {
        &self.headers
    }

    /// The next row, `None` at the end.
    pub(crate) fn next_row(&mut self) -> Result<Option<CsvRow>, JobError> {
        let row = self.next_index + 1;
        match self.reader.read_record(&mut self.record) {
            Ok(false) => return Ok(None),
            Ok(true) => {}
            Err(err) => {
                let line = err.position().map_or(0, csv::Position::line);
                let problem = match err.kind() {
                    csv::ErrorKind::Utf8 { .. } => "not valid UTF-8".to_string(),
                    _ => err.to_string(),
                };
                return Err(self.bad_row(row, line, problem));
            }
        }
        let line = self.record.position().map_or(0, csv::Position::line);
        if self.record.len() != self.headers.len() {
            let problem = format!(
                "has {} fields but the header has {}",
                self.record.len(),
                self.headers.len()
            );
            return Err(self.bad_row(row, line, problem));
        }
        let fields: Vec<String> = self.record.iter().map(str::to_string).collect();
        let source_id = self.id_index.map(|i| fields[i].clone());
        let row_index = self.next_index;
        self.next_index += 1;
        Ok(Some(CsvRow {
            row_index,
            source_id,
            fields,
        }))
    }

    fn bad_row(&self, row: u64, line: u64, problem: String) -> JobError {
        JobError::BadRow {
            path: self.path.clone(),
            row,
            line,
            problem,
        }
    }
}
