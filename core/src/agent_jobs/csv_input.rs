//! Reading a job's input CSV row by row (quoted fields, embedded newlines, a BOM), with
//! ragged or undecodable rows named in the error.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::JobError;
use super::export::RESULT_COLUMNS;

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

/// Refuses a header whose columns would be confused: a repeated name (workers would see only
/// one of the values) or a results column's name (the export would carry it twice).
fn check_header(path: &Path, headers: &[String]) -> Result<(), JobError> {
    let bad = |column: &str, problem: String| JobError::BadHeader {
        path: path.to_path_buf(),
        column: column.to_string(),
        problem,
    };
    for (position, column) in headers.iter().enumerate() {
        if headers[..position].contains(column) {
            return Err(bad(column, "is duplicated".to_string()));
        }
        if RESULT_COLUMNS.contains(&column.as_str()) {
            return Err(bad(
                column,
                format!(
                    "is the name of a results column ({}); rename the column",
                    RESULT_COLUMNS.join(", ")
                ),
            ));
        }
    }
    Ok(())
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
        check_header(path, &headers)?;
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Any text a spreadsheet cell may hold: commas, quotes, newlines, non-ASCII.
    fn cell() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-zA-Z0-9 ,\"\n\r\té€😀]{0,12}")
            .unwrap_or_else(|_| unreachable!("the pattern is valid"))
    }

    fn write_csv(
        dir: &Path,
        header: &[String],
        rows: &[Vec<String>],
        bom: bool,
    ) -> anyhow::Result<PathBuf> {
        let path = dir.join("input.csv");
        let mut bytes = Vec::new();
        if bom {
            bytes.extend_from_slice("\u{feff}".as_bytes());
        }
        {
            let mut writer = csv::WriterBuilder::new()
                .flexible(true)
                .from_writer(&mut bytes);
            writer.write_record(header)?;
            for row in rows {
                writer.write_record(row)?;
            }
            writer.flush()?;
        }
        std::fs::write(&path, bytes)?;
        Ok(path)
    }

    fn read_all(path: &Path) -> Result<(Vec<String>, Vec<Vec<String>>), JobError> {
        let mut rows = CsvRows::open(path, None)?;
        let header = rows.headers().to_vec();
        let mut out = Vec::new();
        while let Some(row) = rows.next_row()? {
            out.push(row.fields);
        }
        Ok((header, out))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Whatever a CSV writer produces reads back field for field, in order, BOM or not.
        #[test]
        fn written_rows_read_back_whole(
            columns in 1usize..5,
            cells in proptest::collection::vec(cell(), 0..40),
            bom in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let header: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
            let rows: Vec<Vec<String>> = cells
                .chunks(columns)
                .filter(|chunk| chunk.len() == columns)
                // A row of one empty field is written as an empty line, which readers skip.
                .filter(|chunk| !(columns == 1 && chunk[0].is_empty()))
                .map(<[String]>::to_vec)
                .collect();
            let path = write_csv(dir.path(), &header, &rows, bom)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (read_header, read_rows) =
                read_all(&path).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(read_header, header);
            prop_assert_eq!(read_rows, rows);
        }

        /// A row with the wrong number of fields is named by its position.
        #[test]
        fn a_ragged_row_is_named(good in 0usize..20, extra in 1usize..3) {
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let header = vec!["a".to_string(), "b".to_string()];
            let mut rows: Vec<Vec<String>> =
                (0..good).map(|i| vec![i.to_string(), "x".to_string()]).collect();
            rows.push((0..2 + extra).map(|i| i.to_string()).collect());
            let path = write_csv(dir.path(), &header, &rows, false)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            match read_all(&path) {
                Err(JobError::BadRow { row, line, problem, .. }) => {
                    prop_assert_eq!(row, good as u64 + 1);
                    prop_assert_eq!(line, good as u64 + 2);
                    prop_assert!(problem.contains("but the header has 2"), "{}", problem);
                }
                other => prop_assert!(false, "expected a bad row, got {:?}", other.map(|r| r.1.len())),
            }
        }
    }
}
