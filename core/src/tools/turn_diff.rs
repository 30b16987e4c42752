//! Tracks the files a turn changes and renders one unified diff of them against their state
//! before the turn first touched them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Baselines of every file touched in the turn (`None`: the file did not exist).
#[derive(Debug, Default)]
pub(crate) struct TurnDiffTracker {
    baselines: BTreeMap<PathBuf, Option<String>>,
    /// Contents written on another host (a remote environment), which this process cannot
    /// read back: the diff shows them instead of the local disk.
    remote_afters: BTreeMap<PathBuf, Option<String>>,
}

impl TurnDiffTracker {
    /// Remembers a file's content before its first change in this turn.
    pub(crate) fn note_baseline(&mut self, path: &Path, before: Option<&str>) {
        self.baselines
            .entry(path.to_path_buf())
            .or_insert_with(|| before.map(str::to_string));
    }

    /// Remembers what a patch wrote to a file on another host.
    pub(crate) fn note_remote_after(&mut self, path: &Path, after: Option<&str>) {
        self.remote_afters
            .insert(path.to_path_buf(), after.map(str::to_string));
    }

    /// The diff of every tracked file from its baseline to what is on disk now (for files
    /// on another host, to what the turn last wrote there).
    pub(crate) fn unified_diff(&self, cwd: &Path) -> String {
        let mut out = String::new();
        for (path, before) in &self.baselines {
            let after = match self.remote_afters.get(path) {
                Some(after) => after.clone(),
                None => std::fs::read_to_string(path).ok(),
            };
            if before == &after {
                continue;
            }
            let shown = path.strip_prefix(cwd).unwrap_or(path).display().to_string();
            let old = before.as_deref().unwrap_or("");
            let new = after.as_deref().unwrap_or("");
            let old_name = if before.is_some() {
                format!("a/{shown}")
            } else {
                "/dev/null".into()
            };
            let new_name = if after.is_some() {
                format!("b/{shown}")
            } else {
                "/dev/null".into()
            };
            out.push_str(&format!("diff --git a/{shown} b/{shown}\n"));
            let diff = similar::TextDiff::from_lines(old, new);
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(&old_name, &new_name)
                    .to_string(),
            );
        }
        out
    }
}
