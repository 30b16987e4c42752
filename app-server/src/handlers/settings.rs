//! `thread/settings/update` and `permissionProfile/list`: what a thread's next turns run with,
//! changed between turns (the Codex TUI's model and permission pickers); and
//! `thread/backgroundTerminals/list`, what still runs in it (the TUI's `/ps`).

use keel_protocol::Op;
use keel_protocol::app_server::{
    EmptyResponse, PERMISSION_PROFILES, PermissionProfileListParams, PermissionProfileListResponse,
    PermissionProfileSummary, ThreadBackgroundTerminal, ThreadBackgroundTerminalsListParams,
    ThreadBackgroundTerminalsListResponse, ThreadIdParams, ThreadSettingsUpdateParams,
};

use super::loaded::loaded;
use super::settings_change::SettingsRequest;
use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// `thread/settings/update`: the engine takes the change before any later turn starts; the
/// thread's clients get `thread/settings/updated`.
pub(crate) async fn update(
    state: &AppState,
    params: ThreadSettingsUpdateParams,
) -> Result<EmptyResponse> {
    const METHOD: &str = "thread/settings/update";
    let thread = loaded(state, &params.thread_id).await?;
    // A remote environment's directory is not on this host: only its form is checked here.
    let in_environment = params
        .environments
        .as_ref()
        .and_then(|list| list.first())
        .map_or_else(
            || thread.meta().environment_id,
            |env| env.environment_id.clone(),
        );
    let here = in_environment == keel_core::config::LOCAL_ENVIRONMENT;
    if let Some(cwd) = &params.cwd
        && !(cwd.is_absolute() && (cwd.is_dir() || !here))
    {
        return Err(AppServerError::InvalidParams {
            method: METHOD.into(),
            message: format!(
                "`cwd` {} is not an absolute path to a directory",
                cwd.display()
            ),
        });
    }
    let request = SettingsRequest {
        method: METHOD,
        sandbox_policy: params.sandbox_policy,
        permissions: params.permissions.as_deref(),
        cwd: params.cwd,
        environments: params.environments.as_deref(),
        approval_policy: params.approval_policy,
        collaboration_mode: params.collaboration_mode,
        model: params.model,
        effort: params.effort,
        within_ceiling: here,
        mode_defaults: true,
    };
    let applied = request.check(state, &thread)?.apply(state, &thread)?;
    for op in [applied.overrides, applied.mode_op].into_iter().flatten() {
        thread.conversation.submit(op).await?;
    }
    let settings = applied.settings;
    thread.broadcast_settings(settings).await;
    Ok(EmptyResponse::default())
}

/// `permissionProfile/list`: one built-in profile per sandbox mode, `limit` at a time (the
/// cursor is the last id returned).
pub(crate) fn permission_profiles(
    params: PermissionProfileListParams,
) -> Result<PermissionProfileListResponse> {
    let start = match params.cursor.as_deref() {
        None => 0,
        Some(cursor) => {
            PERMISSION_PROFILES
                .iter()
                .position(|(id, _)| *id == cursor)
                .ok_or_else(|| AppServerError::InvalidParams {
                    method: "permissionProfile/list".into(),
                    message: format!("`cursor` {cursor:?} is not a cursor this method returned"),
                })?
                + 1
        }
    };
    let limit = params
        .limit
        .map_or(usize::MAX, |limit| limit.max(1) as usize);
    let page: Vec<PermissionProfileSummary> = PERMISSION_PROFILES
        .iter()
        .skip(start)
        .take(limit)
        .map(|(id, _)| PermissionProfileSummary {
            id: (*id).to_string(),
            description: None,
            allowed: true,
        })
        .collect();
    let next_cursor = (start + page.len() < PERMISSION_PROFILES.len())
        .then(|| page.last().map(|profile| profile.id.clone()))
        .flatten();
    Ok(PermissionProfileListResponse {
        data: page,
        next_cursor,
    })
}

/// `thread/backgroundTerminals/list`: the `exec_command` processes still running in a loaded
/// thread, a page at a time (a thread not loaded runs none).
pub(crate) async fn background_terminals(
    state: &AppState,
    params: ThreadBackgroundTerminalsListParams,
) -> Result<ThreadBackgroundTerminalsListResponse> {
    let id = crate::state::parse_thread_id(&params.thread_id)?;
    let Some(thread) = state.loaded(id).await else {
        return Ok(ThreadBackgroundTerminalsListResponse::default());
    };
    let limit = params
        .limit
        .map_or(usize::MAX, |limit| limit.max(1) as usize);
    // The cursor is the last session id returned; sessions are listed in id order, so a page
    // resumes after it even if that session has ended since.
    let after = match params.cursor.as_deref() {
        None => None,
        Some(cursor) => Some(
            cursor
                .parse::<i64>()
                .map_err(|_| AppServerError::InvalidParams {
                    method: "thread/backgroundTerminals/list".into(),
                    message: format!("`cursor` {cursor:?} is not a cursor this method returned"),
                })?,
        ),
    };
    let mut terminals = thread
        .conversation
        .background_terminals()
        .into_iter()
        .filter(|terminal| {
            after.is_none_or(|after| {
                terminal
                    .process_id
                    .parse::<i64>()
                    .is_ok_and(|id| id > after)
            })
        })
        .peekable();
    let mut data = Vec::new();
    while data.len() < limit {
        let Some(terminal) = terminals.next() else {
            break;
        };
        data.push(ThreadBackgroundTerminal {
            item_id: terminal.item_id,
            process_id: terminal.process_id,
            command: terminal.command,
            cwd: terminal.cwd,
            os_pid: None,
            cpu_percent: None,
            rss_kb: None,
        });
    }
    let next_cursor = terminals
        .peek()
        .and(data.last())
        .map(|last| last.process_id.clone());
    Ok(ThreadBackgroundTerminalsListResponse { data, next_cursor })
}

/// `thread/backgroundTerminals/clean`: kills every `exec_command` process the thread left
/// running (each one's command item completes when its end is reported in a turn).
pub(crate) async fn clean_background_terminals(
    state: &AppState,
    params: ThreadIdParams,
) -> Result<EmptyResponse> {
    let thread = loaded(state, &params.thread_id).await?;
    thread
        .conversation
        .submit(Op::CloseBackgroundTerminals { process_id: None })
        .await?;
    Ok(EmptyResponse::default())
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(PermissionProfileList, |_, p| Reply::now(
    &permission_profiles(p)?
));
handle!(ThreadSettingsUpdate, |ctx, p| Reply::now(
    &update(ctx.state, p).await?
));
handle!(ThreadBackgroundTerminalsClean, |ctx, p| Reply::now(
    &clean_background_terminals(ctx.state, p).await?
));
handle!(ThreadBackgroundTerminalsList, |ctx, p| Reply::now(
    &background_terminals(ctx.state, p).await?
));
