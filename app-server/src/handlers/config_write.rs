//! `config/value/write` and `config/batchWrite`: edits to the user's `config.toml`, checked
//! by keel-core before they replace the file. New threads read the file, so they see the
//! change; loaded threads keep their settings (`thread/settings/update` changes those).

use std::path::Path;

use keel_core::config;
use keel_protocol::app_server::{
    ConfigBatchWriteParams, ConfigEdit, ConfigValueWriteParams, ConfigWriteResponse, MergeStrategy,
    WriteStatus,
};
use serde_json::json;

use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// `config/value/write`.
pub(crate) fn config_value_write(
    state: &AppState,
    params: ConfigValueWriteParams,
) -> Result<ConfigWriteResponse> {
    write(
        state,
        "config/value/write",
        &[params.edit],
        params.file_path.as_deref(),
        params.expected_version.as_deref(),
    )
}

/// `config/batchWrite`. An empty batch writes nothing and answers the file's version: the
/// Codex 0.171 TUI sends one to reload the file after installing a plugin.
pub(crate) fn config_batch_write(
    state: &AppState,
    params: ConfigBatchWriteParams,
) -> Result<ConfigWriteResponse> {
    write(
        state,
        "config/batchWrite",
        &params.edits,
        params.file_path.as_deref(),
        params.expected_version.as_deref(),
    )
}

/// Applies `edits` to the user's file as one change, answering as `config/value/write` does
/// (`okOverridden` when a server `-c` wins over the file).
pub(crate) fn write(
    state: &AppState,
    method: &str,
    edits: &[ConfigEdit],
    file_path: Option<&Path>,
    expected_version: Option<&str>,
) -> Result<ConfigWriteResponse> {
    let server = state.resolve_config(&Default::default())?;
    for edit in edits {
        crate::ceiling::check_config_key(&server, method, &edit.key_path)?;
    }
    let keel_home = state.keel_home();
    let user_file = keel_home.join(config::CONFIG_FILE_NAME);
    if let Some(path) = file_path
        && path != user_file
    {
        return Err(AppServerError::InvalidParams {
            method: method.into(),
            message: format!(
                "`filePath` {}: Keel writes only the user config file {}",
                path.display(),
                user_file.display()
            ),
        });
    }
    let edits: Vec<config::ConfigEdit> = edits
        .iter()
        .map(|edit| config::ConfigEdit {
            key_path: edit.key_path.clone(),
            value: edit.value.clone(),
            merge: match edit.merge_strategy {
                MergeStrategy::Replace => config::MergeStrategy::Replace,
                MergeStrategy::Upsert => config::MergeStrategy::Upsert,
            },
        })
        .collect();
    let env = state.config_env();
    let written = {
        // One write at a time, so two clients' edits cannot interleave.
        let _writing = state.config_writes();
        config::write_config_edits(keel_home, &edits, expected_version, &env)?
    };
    // A `-c` given to the server wins over the file for every thread it starts.
    let overriding = state.config.cli_overrides.iter().find(|(key, _)| {
        edits.iter().any(|edit| {
            *key == edit.key_path
                || key.starts_with(&format!("{}.", edit.key_path))
                || edit.key_path.starts_with(&format!("{key}."))
        })
    });
    let (status, overridden_metadata) = match overriding {
        None => (WriteStatus::Ok, None),
        Some((key, value)) => (
            WriteStatus::OkOverridden,
            Some(json!({
                "message": format!("the server was started with `-c {key}={value}`, which overrides the file"),
                "overridingLayer": {"name": {"type": "sessionFlags"}, "version": ""},
                "effectiveValue": value,
            })),
        ),
    };
    Ok(ConfigWriteResponse {
        status,
        version: written.version,
        file_path: written.path,
        overridden_metadata,
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ConfigValueWrite, |ctx, p| Reply::now(&config_value_write(
    ctx.state, p
)?));
handle!(ConfigBatchWrite, |ctx, p| Reply::now(&config_batch_write(
    ctx.state, p
)?));
