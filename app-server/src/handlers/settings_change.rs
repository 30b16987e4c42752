//! The parts of a settings change that `turn/start` and `thread/settings/update` share: the
//! sandbox asked for, the operator's ceiling, an environment move, and what the engine takes now.

use keel_protocol::app_server::SandboxPolicyV2;

use crate::error::{AppServerError, Result};
use crate::state::AppState;
use crate::threads::SettingsChange;

/// The sandbox a request names, by policy or by permission profile (not both).
pub(crate) fn requested_sandbox(
    state: &AppState,
    method: &str,
    policy: Option<SandboxPolicyV2>,
    profile: Option<&str>,
) -> Result<(Option<SandboxPolicyV2>, Option<String>)> {
    match (policy, profile) {
        (Some(_), Some(_)) => Err(AppServerError::InvalidParams {
            method: method.into(),
            message: "give `sandboxPolicy` or `permissions`, not both".into(),
        }),
        (None, Some(id)) => Ok((Some(state.profile_sandbox(method, id)?), Some(id.into()))),
        (policy, None) => Ok((policy, None)),
    }
}

/// Under the operator's ceiling, the thread's sandbox and cwd after a change (what is asked,
/// else what the thread has) may give no more than the server's own configuration.
pub(crate) fn within_ceiling(
    state: &AppState,
    thread: &crate::threads::LoadedThread,
    method: &str,
    sandbox: Option<&SandboxPolicyV2>,
    cwd: Option<&std::path::Path>,
) -> Result<()> {
    if sandbox.is_none() && cwd.is_none() {
        return Ok(());
    }
    let server = state.resolve_config(&Default::default())?;
    let current = thread.settings();
    let policy: keel_protocol::SandboxPolicy = sandbox.cloned().unwrap_or(current.sandbox).into();
    let cwd = cwd.map_or(current.cwd, std::path::Path::to_path_buf);
    crate::ceiling::check_sandbox(&server, method, &policy, &cwd, None)
}

/// The part of `change` the engine takes now: with a move, the working directory goes with
/// the move (made as the next turn begins), never ahead of it into a running turn.
pub(crate) fn engine_change(change: &SettingsChange, moving: bool) -> SettingsChange {
    let mut change = change.clone();
    if moving {
        change.cwd = None;
    }
    change
}

/// Moves the thread to the environment a turn or a settings change names first, from its next
/// turn on (Codex 0.169's `environments`), working in `cwd` there when given, else in the
/// environment's own `cwd`; naming the thread's own environment changes nothing. Returns the
/// working directory of a move. An unknown environment, or none at all (`[]`), is refused.
pub(crate) fn choose_environment(
    state: &AppState,
    thread: &crate::threads::LoadedThread,
    environments: Option<&[keel_protocol::app_server::TurnEnvironmentParams]>,
    cwd: Option<&std::path::Path>,
) -> Result<Option<std::path::PathBuf>> {
    let Some(environments) = environments else {
        return Ok(None);
    };
    let current = thread.meta().environment_id;
    let Some(primary) = environments.first() else {
        return Err(AppServerError::InvalidRequest(format!(
            "a turn without an environment is not supported; this thread runs in `{current}`"
        )));
    };
    if primary.environment_id == current {
        return Ok(None);
    }
    let config = super::environments::resolve_thread_config(
        state,
        environments,
        keel_protocol::app_server::ThreadOverrides::default(),
    )?;
    let cwd = cwd.map_or_else(|| primary.cwd.clone(), std::path::Path::to_path_buf);
    thread
        .conversation
        .move_to_environment(&config, cwd.clone());
    let id = primary.environment_id.clone();
    tracing::info!(thread = %thread.id, from = %current, to = %id, "thread moves to another environment");
    thread.update_meta(|meta| {
        meta.environment_id = id;
        meta.cwd = cwd.clone();
    });
    Ok(Some(cwd))
}
