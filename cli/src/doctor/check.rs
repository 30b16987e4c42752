//! One line of the doctor's report, and how it came out.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Works.
    Ok,
    /// Works, but something deserves a look.
    Warn,
    /// Would stop a run.
    Fail,
    /// Not checked (nothing to check, or an earlier check failed).
    Skip,
}

impl Status {
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "FAIL",
            Self::Skip => "skip",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// What was checked (`config`, `provider`, `mcp:NAME`, ...).
    pub name: String,
    pub status: Status,
    /// What was found, and what to do about a problem.
    pub detail: String,
}

impl Check {
    pub(crate) fn new(name: impl Into<String>, status: Status, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status,
            detail: detail.into(),
        }
    }
}
