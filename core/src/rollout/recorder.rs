//! Appends rollout lines to a file as the conversation goes.

use std::path::{Path, PathBuf};

use chrono::{SecondsFormat, Utc};
use keel_protocol::ConversationId;
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use super::{RolloutItem, RolloutLine, SessionMeta};
use crate::error::{CoreError, Result};

/// Writes one conversation's rollout file; each line is flushed before `record` returns.
#[derive(Debug)]
pub struct RolloutRecorder {
    path: PathBuf,
    file: Mutex<tokio::fs::File>,
}

impl RolloutRecorder {
    /// Creates a new rollout file for a conversation under `keel_home/sessions/YYYY/MM/DD/`
    /// and writes its session meta.
    pub async fn create(keel_home: &Path, meta: SessionMeta) -> Result<Self> {
        let now = Utc::now();
        let dir = keel_home
            .join(super::SESSIONS_DIR)
            .join(now.format("%Y").to_string())
            .join(now.format("%m").to_string())
            .join(now.format("%d").to_string());
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|err| CoreError::io(format!("create {}", dir.display()), err))?;
        let path = dir.join(format!(
            "rollout-{}-{}.jsonl",
            now.format("%Y-%m-%dT%H-%M-%S"),
            meta.id
        ));
        let recorder = Self::open_append(&path).await?;
        recorder.record(&[RolloutItem::SessionMeta(meta)]).await?;
        Ok(recorder)
    }

    /// Opens an existing rollout file to continue it (resume).
    pub async fn open_append(path: &Path) -> Result<Self> {
        let file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await
            .map_err(|err| CoreError::Rollout {
                path: path.to_path_buf(),
                message: err.to_string(),
            })?;
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends items, one line each, and flushes.
    pub async fn record(&self, items: &[RolloutItem]) -> Result<()> {
        let timestamp = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        let mut text = String::new();
        for item in items {
            let line = RolloutLine {
                timestamp: timestamp.clone(),
                item: item.clone(),
            };
            let json = serde_json::to_string(&line).map_err(|err| CoreError::Rollout {
                path: self.path.clone(),
                message: format!("cannot serialise a line: {err}"),
            })?;
            text.push_str(&json);
            text.push('\n');
        }
        let mut file = self.file.lock().await;
        let write = async {
            file.write_all(text.as_bytes()).await?;
            file.flush().await
        };
        write.await.map_err(|err| CoreError::Rollout {
            path: self.path.clone(),
            message: err.to_string(),
        })
    }
}

/// A new session meta for a conversation starting now.
pub(crate) fn recorder_meta(
    id: ConversationId,
    cwd: &Path,
    model: &str,
    forked_from: Option<ConversationId>,
) -> SessionMeta {
    SessionMeta {
        id,
        timestamp: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        cwd: cwd.to_path_buf(),
        model: Some(model.to_string()),
        originator: "keel".to_string(),
        cli_version: env!("CARGO_PKG_VERSION").to_string(),
        forked_from,
    }
}
