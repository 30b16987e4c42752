//! Why a PostgreSQL step failed, before a store says what it was doing.

/// A PostgreSQL connection or statement problem.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PostgresError {
    /// The connection settings are wrong (a bad URL, setting or service).
    #[error("{0}")]
    BadConnInfo(String),
    /// The server refused or failed a step (its own words), or could not be reached.
    #[error("{0}")]
    Server(String),
    /// The database (named without its password) failed.
    #[error("{store}: {cause}")]
    Named {
        /// The database, as `postgres://user@host:port/db`.
        store: String,
        /// What went wrong.
        cause: String,
    },
}

/// `err` and every cause under it, as "a: b: c".
fn with_causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

impl From<tokio_postgres::Error> for PostgresError {
    fn from(err: tokio_postgres::Error) -> Self {
        // The server's own message (with its detail) says more than the driver's summary.
        match err.as_db_error() {
            Some(db) => Self::Server(match db.detail() {
                Some(detail) => format!("{}: {detail}", db.message()),
                None => db.message().to_string(),
            }),
            // The driver's own text leaves out the cause ("Connection refused").
            None => Self::Server(with_causes(&err)),
        }
    }
}
