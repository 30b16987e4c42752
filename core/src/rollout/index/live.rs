//! Rollout files being written: each writer notes its file in `KEEL_HOME/thread-index.live`
//! (one line, appended), so the thread index re-reads files that grew without stat'ing every
//! rollout on disk. Cheap for writers: no database, one short append per file and hour.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where writers note their files.
pub(crate) const LIVE_FILE: &str = "thread-index.live";

/// Notes that `rollout` is being written. The Keel home is the parent of the `sessions` or
/// `archived_sessions` directory the file lives under; a file elsewhere is not noted. A
/// failure only delays when listings see the file's new lines, so it is logged, not raised.
pub(crate) fn note_live(rollout: &Path) {
    let Some(home) = keel_home_of(rollout) else {
        return;
    };
    let mut line = rollout.as_os_str().to_string_lossy().into_owned();
    if line.contains('\n') {
        return;
    }
    line.push('\n');
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join(LIVE_FILE))
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(err) = written {
        tracing::debug!(path = %rollout.display(), "cannot note a live rollout: {err}");
    }
}

fn keel_home_of(rollout: &Path) -> Option<PathBuf> {
    rollout.ancestors().find_map(|dir| {
        let name = dir.file_name()?;
        (name == super::super::SESSIONS_DIR || name == super::super::ARCHIVED_SESSIONS_DIR)
            .then(|| dir.parent().map(Path::to_path_buf))
            .flatten()
    })
}
