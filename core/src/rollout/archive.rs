//! Archiving moves a rollout file out of `sessions/` into `archived_sessions/` (keeping its
//! dated sub-path), so listings skip it; unarchiving moves it back.

use std::path::{Path, PathBuf};

use super::{ARCHIVED_SESSIONS_DIR, SESSIONS_DIR};
use crate::error::{CoreError, Result};

/// Moves a live rollout file into the archive and returns its new path.
pub async fn archive_rollout(keel_home: &Path, path: &Path) -> Result<PathBuf> {
    relocate(keel_home, path, SESSIONS_DIR, ARCHIVED_SESSIONS_DIR).await
}

/// Moves an archived rollout file back among the live ones and returns its new path.
pub async fn unarchive_rollout(keel_home: &Path, path: &Path) -> Result<PathBuf> {
    relocate(keel_home, path, ARCHIVED_SESSIONS_DIR, SESSIONS_DIR).await
}

/// Removes a rollout file (live or archived) for good.
pub async fn delete_rollout(path: &Path) -> Result<()> {
    tokio::fs::remove_file(path)
        .await
        .map_err(|err| CoreError::io(format!("delete {}", path.display()), err))
}

async fn relocate(keel_home: &Path, path: &Path, from: &str, to: &str) -> Result<PathBuf> {
    let from_root = keel_home.join(from);
    let relative = path
        .strip_prefix(&from_root)
        .map_err(|_| CoreError::Rollout {
            path: path.to_path_buf(),
            message: format!("not under {}", from_root.display()),
        })?;
    let target = keel_home.join(to).join(relative);
    if let Some(parent) = target.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|err| CoreError::io(format!("create {}", parent.display()), err))?;
    }
    tokio::fs::rename(path, &target).await.map_err(|err| {
        CoreError::io(
            format!("move {} to {}", path.display(), target.display()),
            err,
        )
    })?;
    Ok(target)
}
