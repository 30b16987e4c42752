//! Files a turn reads for itself (its `AGENTS.md`, an image the model asks to see), read
//! where its commands run: on this host, or on the exec-server's through `fs.v1`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use keel_protocol::exec_server::{
    FS_EXTENSION, FileListParams, FileListResponse, FileReadParams, FileReadResponse,
    FileStatParams, FileStatResponse,
};

use super::{ProcessError, ProcessLayer};

/// How long a file request may go unanswered before the server is reported as silent.
const FILE_TIMEOUT: Duration = Duration::from_secs(60);

fn no_file_answer() -> ProcessError {
    ProcessError::Connect(format!(
        "the exec-server did not answer the file request within {} s",
        FILE_TIMEOUT.as_secs()
    ))
}

impl ProcessLayer {
    /// Reads `path` (absolute) where the turn's commands run, taking at most `max_bytes`.
    pub(crate) async fn read_file(
        &self,
        path: &Path,
        max_bytes: u64,
    ) -> Result<FileReadResponse, ProcessError> {
        let params = FileReadParams {
            path: path.to_path_buf(),
            max_bytes: Some(max_bytes),
        };
        if self.is_local() {
            return tokio::task::spawn_blocking(move || keel_exec_server::files::read(&params))
                .await
                .map_err(|err| ProcessError::Connect(format!("reading a file failed: {err}")));
        }
        let connected = self.connected_with(FS_EXTENSION).await?;
        tokio::time::timeout(FILE_TIMEOUT, connected.client.read_file(params))
            .await
            .map_err(|_| no_file_answer())?
            .map_err(ProcessError::from)
    }

    /// Whether `path` (absolute) exists where the turn's commands run, and what it is.
    pub(crate) async fn stat_file(&self, path: &Path) -> Result<FileStatResponse, ProcessError> {
        let params = FileStatParams {
            path: path.to_path_buf(),
        };
        if self.is_local() {
            return Ok(keel_exec_server::files::stat(&params));
        }
        let connected = self.connected_with(FS_EXTENSION).await?;
        tokio::time::timeout(FILE_TIMEOUT, connected.client.stat_file(params))
            .await
            .map_err(|_| no_file_answer())?
            .map_err(ProcessError::from)
    }

    /// Lists directory `path` (absolute) where the turn's commands run.
    pub(crate) async fn list_dir(&self, path: &Path) -> Result<FileListResponse, ProcessError> {
        let params = FileListParams {
            path: path.to_path_buf(),
        };
        if self.is_local() {
            return tokio::task::spawn_blocking(move || keel_exec_server::files::list(&params))
                .await
                .map_err(|err| ProcessError::Connect(format!("listing a folder failed: {err}")));
        }
        let connected = self.connected_with(FS_EXTENSION).await?;
        tokio::time::timeout(FILE_TIMEOUT, connected.client.list_dir(params))
            .await
            .map_err(|_| no_file_answer())?
            .map_err(ProcessError::from)
    }

    /// The repository `cwd` is in where the turn's commands run: its nearest ancestor (or
    /// itself) holding `.git`.
    pub(crate) async fn repo_root(&self, cwd: &Path) -> Result<Option<PathBuf>, ProcessError> {
        for dir in cwd.ancestors() {
            if matches!(
                self.stat_file(&dir.join(".git")).await?,
                FileStatResponse::Found { .. }
            ) {
                return Ok(Some(dir.to_path_buf()));
            }
        }
        Ok(None)
    }
}
