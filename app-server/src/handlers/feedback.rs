//! `feedback/save`: a person's report about a session, written as a zip archive where they
//! asked (`report.json`, `manifest.json`, and with `includeLogs` the thread's rollout and any
//! extra files under `attachments/`). Nothing leaves the machine; `feedback/upload` is
//! refused (`unoffered.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use keel_protocol::app_server::{FeedbackSaveParams, FeedbackSaveResponse};
use serde_json::json;

use crate::error::{AppServerError, Result};
use crate::state::{AppState, parse_thread_id};

/// A file to put in the archive: its name there and where it is read from.
struct Attachment {
    entry: String,
    source: PathBuf,
}

async fn save(state: &AppState, params: FeedbackSaveParams) -> Result<FeedbackSaveResponse> {
    if !params.save_path.is_absolute() {
        return Err(AppServerError::InvalidRequest(
            "feedback savePath must be an absolute host path".into(),
        ));
    }
    state.check_client_write("feedback/save", &params.save_path)?;
    let thread_id = params
        .thread_id
        .clone()
        .unwrap_or_else(|| format!("no-active-thread-{}", uuid::Uuid::now_v7()));
    let mut sources = Vec::new();
    if params.include_logs
        && let Some(id) = params
            .thread_id
            .as_deref()
            .and_then(|id| parse_thread_id(id).ok())
    {
        let rollout = match state.loaded(id).await {
            Some(thread) => thread.meta().path,
            None => match state.find_rollout(id, false).await? {
                Some(path) => Some(path),
                None => state.find_rollout(id, true).await?,
            },
        };
        sources.extend(rollout);
    }
    for extra in params.extra_log_files.iter().flatten() {
        if !extra.is_absolute() {
            return Err(AppServerError::InvalidRequest(format!(
                "extraLogFiles: `{}` is not an absolute path",
                extra.display()
            )));
        }
        sources.push(extra.clone());
    }
    let attachments: Vec<Attachment> = sources
        .into_iter()
        .enumerate()
        .map(|(index, source)| Attachment {
            entry: format!(
                "attachments/{index:04}/{}",
                source
                    .file_name()
                    .map_or_else(|| "file".into(), |name| name.to_string_lossy())
            ),
            source,
        })
        .collect();
    let report = json!({
        "reportId": uuid::Uuid::new_v4().to_string(),
        "createdAt": chrono::Utc::now().to_rfc3339(),
        "classification": params.classification,
        "reason": params.reason,
        "threadId": thread_id,
        "tags": params.tags.clone().unwrap_or_default(),
        "keelVersion": env!("CARGO_PKG_VERSION"),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
    });
    let path = params.save_path.clone();
    tokio::task::spawn_blocking(move || write_archive(&path, &report, &attachments))
        .await
        .map_err(|err| AppServerError::Internal(format!("feedback: {err}")))??;
    Ok(FeedbackSaveResponse {
        saved_path: params.save_path,
        thread_id,
        prompt_hash: None,
    })
}

/// Writes the archive beside `path` and moves it there once complete (owner-only: it may
/// hold the conversation).
fn write_archive(
    path: &Path,
    report: &serde_json::Value,
    attachments: &[Attachment],
) -> Result<()> {
    let failed = |what: &dyn std::fmt::Display| {
        AppServerError::Internal(format!(
            "failed to save feedback to {}: {what}",
            path.display()
        ))
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    let mut temp = tempfile::Builder::new()
        .prefix(".keel-feedback")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|err| failed(&err))?;
    {
        let mut zip = zip::ZipWriter::new(temp.as_file_mut());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(0o600);
        let mut add = |name: &str, bytes: &[u8]| -> Result<()> {
            zip.start_file(name, options).map_err(|err| failed(&err))?;
            zip.write_all(bytes).map_err(|err| failed(&err))
        };
        let report = serde_json::to_vec_pretty(report).map_err(|err| failed(&err))?;
        add("report.json", &report)?;
        let manifest: Vec<_> = attachments
            .iter()
            .map(|file| json!({"entry": file.entry, "source": file.source}))
            .collect();
        let manifest = serde_json::to_vec_pretty(&manifest).map_err(|err| failed(&err))?;
        add("manifest.json", &manifest)?;
        for file in attachments {
            let bytes = std::fs::read(&file.source).map_err(|err| {
                AppServerError::InvalidRequest(format!(
                    "cannot attach {}: {err}",
                    file.source.display()
                ))
            })?;
            add(&file.entry, &bytes)?;
        }
        zip.finish().map_err(|err| failed(&err))?;
    }
    temp.persist(path).map_err(|err| failed(&err.error))?;
    Ok(())
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(FeedbackSave, |ctx, p| Reply::now(
    &save(ctx.state, p).await?
));
