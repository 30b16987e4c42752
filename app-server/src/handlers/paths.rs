//! Checks on the paths a request names.

use std::path::Path;

use crate::error::{AppServerError, Result};

/// Rejects relative paths, naming the parameter and the path.
pub(crate) fn require_absolute(method: &str, name: &str, path: &Path) -> Result<()> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(AppServerError::InvalidParams {
            method: method.to_string(),
            message: format!(
                "`{name}` must be an absolute path, got `{}`",
                path.display()
            ),
        })
    }
}
