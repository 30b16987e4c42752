//! Paths resolved lexically: joined to a working directory with `.` and `..` folded, without
//! touching the disk.

use std::path::{Component, Path, PathBuf};

/// Joins `path` to `cwd` (unless absolute) and resolves `.` and `..` without touching disk.
pub(crate) fn resolve(cwd: &Path, path: &Path) -> PathBuf {
    let mut resolved = PathBuf::new();
    for component in cwd.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let can_pop = matches!(
                    resolved.components().next_back(),
                    Some(Component::Normal(_))
                );
                if can_pop {
                    resolved.pop();
                } else if !resolved.has_root() {
                    // A relative cwd can leave leading `..` that must be kept.
                    resolved.push("..");
                }
            }
            other => resolved.push(other),
        }
    }
    resolved
}
