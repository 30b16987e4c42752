//! What a successful apply changed, and the tool output that says so.

use std::fmt;
use std::path::PathBuf;

/// The first line of a successful apply's tool output: callers tell success by it.
pub const SUCCESS_HEADING: &str = "Success. Updated the following files:";

/// What a successful apply changed, with paths as the patch wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedSummary {
    /// Files created (or overwritten) by `*** Add File:`.
    pub added: Vec<PathBuf>,
    /// Files edited; for a move, the destination path.
    pub modified: Vec<PathBuf>,
    /// Files removed.
    pub deleted: Vec<PathBuf>,
    /// Non-fatal problems, such as a leftover backup file that could not be removed.
    pub warnings: Vec<String>,
}

impl fmt::Display for AppliedSummary {
    /// Renders the tool output: `Success. Updated the following files:` then `A/M/D path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{SUCCESS_HEADING}")?;
        let groups = [
            ("A", &self.added),
            ("M", &self.modified),
            ("D", &self.deleted),
        ];
        for (letter, paths) in groups {
            for path in paths {
                writeln!(f, "{letter} {}", path.display())?;
            }
        }
        for warning in &self.warnings {
            writeln!(f, "warning: {warning}")?;
        }
        Ok(())
    }
}
