//! The directories a per-workspace listing (`hooks/list`, `skills/list`) answers for.

use std::path::{Path, PathBuf};

/// Each asked directory as the client wrote it (echoed back as `cwd`) and as a path
/// (relative ones against `base`); no directory asked means `base` itself.
pub(super) fn asked_dirs(base: &Path, cwds: Vec<String>) -> Vec<(String, PathBuf)> {
    if cwds.is_empty() {
        return vec![(base.display().to_string(), base.to_path_buf())];
    }
    cwds.into_iter()
        .map(|cwd| {
            let dir = base.join(&cwd);
            (cwd, dir)
        })
        .collect()
}
