//! One settings change for `turn/start` and `thread/settings/update`: the sandbox asked for
//! (by policy or profile), the operator's ceiling, an environment move, and what the engine
//! takes now ([`SettingsRequest`]).

use keel_protocol::app_server::SandboxPolicyV2;

use crate::error::{AppServerError, Result};
use crate::state::AppState;
use crate::threads::SettingsChange;

/// The sandbox a request names, by policy or by permission profile (not both).
fn requested_sandbox(
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
fn within_ceiling(
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
fn engine_change(change: &SettingsChange, moving: bool) -> SettingsChange {
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
fn choose_environment(
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

/// A settings change as `turn/start` or `thread/settings/update` asks for it: the one
/// operation both requests run, in two steps. [`SettingsRequest::check`] refuses a bad request
/// before anything changes (a turn is claimed between the two steps); [`CheckedSettings::apply`]
/// moves the thread to another environment if asked and records the change.
pub(crate) struct SettingsRequest<'a> {
    pub method: &'static str,
    pub sandbox_policy: Option<SandboxPolicyV2>,
    pub permissions: Option<&'a str>,
    pub cwd: Option<std::path::PathBuf>,
    pub environments: Option<&'a [keel_protocol::app_server::TurnEnvironmentParams]>,
    pub approval_policy: Option<keel_protocol::AskForApproval>,
    pub collaboration_mode: Option<keel_protocol::app_server::CollaborationMode>,
    pub model: Option<String>,
    pub effort: Option<keel_protocol::ReasoningEffort>,
    /// Whether the sandbox and cwd are held to the operator's ceiling (a directory in a remote
    /// environment is not on this host).
    pub within_ceiling: bool,
    /// Whether the collaboration mode's own model and effort stand in for ones not given
    /// (`thread/settings/update`; a turn keeps the thread's).
    pub mode_defaults: bool,
}

/// A request that passed its checks.
pub(crate) struct CheckedSettings<'a> {
    request: SettingsRequest<'a>,
    sandbox: Option<SandboxPolicyV2>,
    permission_profile: Option<String>,
    mode_op: Option<keel_protocol::Op>,
}

/// What applying a change gives: the thread's settings after it, whether they changed, and
/// the engine operations that carry it (the overrides, then the collaboration mode).
pub(crate) struct AppliedSettings {
    pub settings: keel_protocol::app_server::ThreadTurnSettings,
    pub changed: bool,
    pub overrides: Option<keel_protocol::Op>,
    pub mode_op: Option<keel_protocol::Op>,
}

impl<'a> SettingsRequest<'a> {
    /// Checks the collaboration mode, resolves the sandbox (by policy or profile) and holds it
    /// and the cwd to the ceiling; nothing changes yet.
    pub(crate) fn check(
        self,
        state: &AppState,
        thread: &crate::threads::LoadedThread,
    ) -> Result<CheckedSettings<'a>> {
        let mode_op = self
            .collaboration_mode
            .as_ref()
            .map(|mode| mode.to_op())
            .transpose()
            .map_err(|message| AppServerError::InvalidParams {
                method: self.method.into(),
                message,
            })?;
        let (sandbox, permission_profile) = requested_sandbox(
            state,
            self.method,
            self.sandbox_policy.clone(),
            self.permissions,
        )?;
        if self.within_ceiling {
            within_ceiling(
                state,
                thread,
                self.method,
                sandbox.as_ref(),
                self.cwd.as_deref(),
            )?;
        }
        Ok(CheckedSettings {
            request: self,
            sandbox,
            permission_profile,
            mode_op,
        })
    }
}

impl CheckedSettings<'_> {
    /// Moves the thread to the environment asked for (if any) and records the change on it.
    pub(crate) fn apply(
        self,
        state: &AppState,
        thread: &crate::threads::LoadedThread,
    ) -> Result<AppliedSettings> {
        let request = self.request;
        let moved_to =
            choose_environment(state, thread, request.environments, request.cwd.as_deref())?;
        let mode_settings = request
            .collaboration_mode
            .as_ref()
            .filter(|_| request.mode_defaults)
            .map(|mode| mode.settings.clone());
        let change = SettingsChange {
            collaboration_mode: request
                .collaboration_mode
                .as_ref()
                .map(|mode| mode.mode.clone()),
            cwd: request.cwd.or(moved_to.clone()),
            approval_policy: request.approval_policy,
            sandbox: self.sandbox,
            permission_profile: self.permission_profile,
            model: request
                .model
                .or_else(|| mode_settings.as_ref().map(|s| s.model.clone())),
            effort: request
                .effort
                .or_else(|| mode_settings.and_then(|s| s.reasoning_effort)),
        };
        // Codex clients repeat their settings on every turn: only a change goes to the engine.
        let (settings, changed) = thread.change_settings(&change);
        let overrides = changed
            .then(|| engine_change(&change, moved_to.is_some()).to_op())
            .flatten();
        Ok(AppliedSettings {
            settings,
            changed,
            overrides,
            mode_op: self.mode_op,
        })
    }
}
