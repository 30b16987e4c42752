//! Appends rollout lines to a file as the conversation goes.

use std::path::{Path, PathBuf};

use chrono::{SecondsFormat, Utc};
use keel_protocol::ConversationId;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
use tokio::sync::Mutex;

use super::{RolloutItem, RolloutLine, SessionMeta};
use crate::error::{CoreError, Result};

/// Writes one conversation's rollout file; each line is flushed before `record` returns.
#[derive(Debug)]
pub struct RolloutRecorder {
    path: PathBuf,
    file: Mutex<tokio::fs::File>,
    /// When the file was last noted as being written (see [`super::index`]).
    noted_at: std::sync::Mutex<std::time::Instant>,
}

/// How often a writer notes its file again, so an index that stopped watching an idle file
/// picks it up once it grows again.
const RENOTE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

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

    /// Opens an existing rollout file to continue it (resume). A torn last line (a crash
    /// mid-write) is ended first, so the next line is not glued to it and lost as well.
    pub async fn open_append(path: &Path) -> Result<Self> {
        let rollout_error = |err: std::io::Error| CoreError::Rollout {
            path: path.to_path_buf(),
            message: err.to_string(),
        };
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .await
            .map_err(rollout_error)?;
        if ends_mid_line(&mut file).await.map_err(rollout_error)? {
            file.write_all(b"\n").await.map_err(rollout_error)?;
            file.flush().await.map_err(rollout_error)?;
        }
        super::index::note_live(path);
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            noted_at: std::sync::Mutex::new(std::time::Instant::now()),
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
        self.renote_if_idle();
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

impl RolloutRecorder {
    fn renote_if_idle(&self) {
        let mut noted_at = self
            .noted_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if noted_at.elapsed() >= RENOTE_EVERY {
            *noted_at = std::time::Instant::now();
            super::index::note_live(&self.path);
        }
    }
}

/// Whether a non-empty file's last byte is not a newline.
async fn ends_mid_line(file: &mut tokio::fs::File) -> std::io::Result<bool> {
    if file.metadata().await?.len() == 0 {
        return Ok(false);
    }
    file.seek(std::io::SeekFrom::End(-1)).await?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last).await?;
    Ok(last[0] != b'\n')
}

/// A new session meta for a conversation starting now with `config`, started by `source`.
pub(crate) fn recorder_meta(
    id: ConversationId,
    config: &crate::config::Config,
    forked_from: Option<ConversationId>,
    source: keel_protocol::app_server::SessionSource,
) -> SessionMeta {
    SessionMeta {
        id,
        timestamp: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        cwd: config.cwd.clone(),
        model: Some(config.model.clone()),
        originator: "keel".to_string(),
        cli_version: env!("CARGO_PKG_VERSION").to_string(),
        forked_from,
        dynamic_tools: config.dynamic_tools.clone(),
        source: Some(source),
        model_provider: Some(config.model_provider_id.clone()),
    }
}
