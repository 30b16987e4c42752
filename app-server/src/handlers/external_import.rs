//! `externalAgentConfig/*`: another agent's setup brought into Keel. Keel imports project
//! instructions — a project's `CLAUDE.md` becomes its `AGENTS.md`, which Keel reads — and
//! says for every other kind that it does not import it. Imports (and those a client reports
//! with `recordHistory`) are kept in `$KEEL_HOME/external-agent-imports.jsonl`, newest first
//! in `readHistories`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_protocol::app_server::{
    ExternalAgentConfigDetectParams, ExternalAgentConfigDetectResponse,
    ExternalAgentConfigImportHistoriesReadResponse, ExternalAgentConfigImportHistory,
    ExternalAgentConfigImportItemTypeFailure, ExternalAgentConfigImportItemTypeSuccess,
    ExternalAgentConfigImportNotification, ExternalAgentConfigImportParams,
    ExternalAgentConfigImportResponse, ExternalAgentConfigImportTypeResult,
    ExternalAgentConfigMigrationItem, ExternalAgentConfigMigrationItemType as ItemType,
    ServerNotification,
};
use serde_json::json;

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// The history file under the Keel home.
const HISTORY_FILE: &str = "external-agent-imports.jsonl";

/// The project instructions another agent keeps, and the file Keel reads instead.
const SOURCE_DOC: &str = "CLAUDE.md";
const TARGET_DOC: &str = "AGENTS.md";

/// `externalAgentConfig/detect`: the asked projects with a `CLAUDE.md` and no `AGENTS.md`.
fn detect(params: &ExternalAgentConfigDetectParams) -> ExternalAgentConfigDetectResponse {
    let items = params
        .cwds
        .iter()
        .flatten()
        .map(PathBuf::from)
        .filter(|cwd| cwd.is_absolute())
        .filter(|cwd| cwd.join(SOURCE_DOC).is_file() && !cwd.join(TARGET_DOC).exists())
        .map(|cwd| {
            json!({
                "itemType": ItemType::AgentsMd,
                "description": format!(
                    "Import {} to {}",
                    cwd.join(SOURCE_DOC).display(),
                    cwd.join(TARGET_DOC).display()
                ),
                "cwd": cwd,
            })
        })
        .collect();
    ExternalAgentConfigDetectResponse {
        items,
        connectors: Vec::new(),
    }
}

/// What came of one item.
enum Outcome {
    /// There was nothing to import.
    Nothing,
    /// Imported.
    Imported(ExternalAgentConfigImportItemTypeSuccess),
    /// Not imported, and why.
    Failed(ExternalAgentConfigImportItemTypeFailure),
}

/// Imports one item; `refused` says why its target may not be written (the operator's ceiling
/// on clients).
fn import_item(item: &ExternalAgentConfigMigrationItem, refused: Option<&str>) -> Outcome {
    let fail = |stage: &str, message: String, source: Option<&Path>| {
        Outcome::Failed(ExternalAgentConfigImportItemTypeFailure {
            item_type: item.item_type,
            failure_stage: stage.to_string(),
            message,
            error_type: None,
            sub_error_type: None,
            cwd: item.cwd.clone(),
            source: source.map(|path| path.display().to_string()),
        })
    };
    if item.item_type != ItemType::AgentsMd {
        return fail(
            "import",
            format!("Keel does not import {} items", item.item_type.as_str()),
            None,
        );
    }
    let Some(cwd) = item.cwd.as_deref().filter(|cwd| !cwd.is_empty()) else {
        return fail(
            "import",
            "Keel reads no home-level AGENTS.md; import a project's instructions instead".into(),
            None,
        );
    };
    let cwd = Path::new(cwd);
    let source = cwd.join(SOURCE_DOC);
    let target = cwd.join(TARGET_DOC);
    if let Some(reason) = refused {
        return fail("write", reason.to_string(), Some(&source));
    }
    let text = match std::fs::read_to_string(&source) {
        Ok(text) => text,
        // Nothing there (any more): nothing to import.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Outcome::Nothing,
        Err(err) => return fail("read", err.to_string(), Some(&source)),
    };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
    match written {
        Ok(()) => Outcome::Imported(ExternalAgentConfigImportItemTypeSuccess {
            item_type: item.item_type,
            cwd: item.cwd.clone(),
            source: Some(source.display().to_string()),
            target: Some(target.display().to_string()),
        }),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => fail(
            "write",
            format!("{} already exists; it was left as it is", target.display()),
            Some(&source),
        ),
        Err(err) => fail("write", err.to_string(), Some(&source)),
    }
}

/// The results of one item, as its kind's result.
fn result_of(
    item: &ExternalAgentConfigMigrationItem,
    refused: Option<&str>,
) -> ExternalAgentConfigImportTypeResult {
    let mut result = ExternalAgentConfigImportTypeResult {
        item_type: item.item_type,
        successes: Vec::new(),
        failures: Vec::new(),
    };
    match import_item(item, refused) {
        Outcome::Nothing => {}
        Outcome::Imported(success) => result.successes.push(success),
        Outcome::Failed(failure) => result.failures.push(failure),
    }
    result
}

/// Several items' results merged by kind, in first-seen order.
fn merged(
    results: &[ExternalAgentConfigImportTypeResult],
) -> Vec<ExternalAgentConfigImportTypeResult> {
    let mut out: Vec<ExternalAgentConfigImportTypeResult> = Vec::new();
    for result in results {
        match out
            .iter_mut()
            .find(|kept| kept.item_type == result.item_type)
        {
            Some(kept) => {
                kept.successes.extend(result.successes.iter().cloned());
                kept.failures.extend(result.failures.iter().cloned());
            }
            None => out.push(result.clone()),
        }
    }
    out
}

/// `externalAgentConfig/import`: answers the import's id, then one `progress` per item and
/// `completed` with them all; the import is recorded (an empty one is not).
async fn import(
    state: &AppState,
    params: ExternalAgentConfigImportParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    let import_id = uuid::Uuid::new_v4().to_string();
    let response = ExternalAgentConfigImportResponse {
        import_id: import_id.clone(),
    };
    if params.migration_items.is_empty() {
        return Reply::now(&response);
    }
    let items = params.migration_items;
    // What a client may not write (outside the server's roots, under the ceiling) fails.
    let refusals: Vec<Option<String>> = items
        .iter()
        .map(|item| {
            let cwd = item.cwd.as_deref().filter(|cwd| !cwd.is_empty())?;
            state
                .check_client_write(
                    "externalAgentConfig/import",
                    &Path::new(cwd).join(TARGET_DOC),
                )
                .err()
                .map(|err| err.to_string())
        })
        .collect();
    let results = tokio::task::spawn_blocking(move || {
        items
            .iter()
            .zip(&refusals)
            .map(|(item, refused)| result_of(item, refused.as_deref()))
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|err| AppServerError::Internal(format!("import: {err}")))?;
    let all = merged(&results);
    record(state, &import_id, params.provider_id, &all).await?;
    let outgoing = outgoing.clone();
    Reply::then(&response, async move {
        for result in results {
            outgoing
                .notify(ServerNotification::ExternalAgentConfigImportProgress(
                    ExternalAgentConfigImportNotification {
                        import_id: import_id.clone(),
                        item_type_results: vec![result],
                    },
                ))
                .await;
        }
        outgoing
            .notify(ServerNotification::ExternalAgentConfigImportCompleted(
                ExternalAgentConfigImportNotification {
                    import_id,
                    item_type_results: all,
                },
            ))
            .await;
    })
}

/// Appends an import to the history file.
async fn record(
    state: &AppState,
    import_id: &str,
    provider_id: Option<String>,
    results: &[ExternalAgentConfigImportTypeResult],
) -> Result<()> {
    let entry = ExternalAgentConfigImportHistory {
        import_id: import_id.to_string(),
        provider_id,
        completed_at_ms: chrono::Utc::now().timestamp_millis(),
        successes: results.iter().flat_map(|r| r.successes.clone()).collect(),
        failures: results.iter().flat_map(|r| r.failures.clone()).collect(),
    };
    let mut line = serde_json::to_string(&entry)
        .map_err(|err| AppServerError::Internal(format!("import history: {err}")))?;
    line.push('\n');
    let path = state.keel_home().join(HISTORY_FILE);
    tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()))
            .map_err(|source| AppServerError::Io {
                path: path.display().to_string(),
                source,
            })
    })
    .await
    .map_err(|err| AppServerError::Internal(format!("import history: {err}")))?
}

/// Every recorded import, newest first (a line that cannot be read is skipped and logged).
async fn histories(state: &AppState) -> Result<ExternalAgentConfigImportHistoriesReadResponse> {
    let path = state.keel_home().join(HISTORY_FILE);
    let text = match tokio::fs::read_to_string(&path).await {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(AppServerError::Io {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let mut data: Vec<ExternalAgentConfigImportHistory> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| match serde_json::from_str(line) {
            Ok(entry) => Some(entry),
            Err(err) => {
                tracing::warn!(
                    "{}: skipping an unreadable import record: {err}",
                    path.display()
                );
                None
            }
        })
        .collect();
    data.reverse();
    Ok(ExternalAgentConfigImportHistoriesReadResponse {
        data,
        connectors: Vec::new(),
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ExternalAgentConfigDetect, |_, p| Reply::now(&detect(&p)));
handle!(ExternalAgentConfigImport, |ctx, p| import(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ExternalAgentConfigImportRecordHistory, |ctx, p| {
    let import_id = uuid::Uuid::new_v4().to_string();
    record(
        ctx.state,
        &import_id,
        Some(p.provider_id),
        &p.item_type_results,
    )
    .await?;
    Reply::now(&ExternalAgentConfigImportResponse { import_id })
});
handle!(ExternalAgentConfigImportReadHistories, |ctx, _| Reply::now(
    &histories(ctx.state).await?
));
