//! `thread/settings/update` and `permissionProfile/list`: what a thread's next turns run with,
//! changed between turns (the Codex TUI's model and permission pickers).

use keel_protocol::app_server::{
    EmptyResponse, PERMISSION_PROFILES, PermissionProfileListParams, PermissionProfileListResponse,
    PermissionProfileSummary, SandboxPolicyV2, ThreadSettingsUpdateParams,
};

use super::turns::loaded;
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

/// `thread/settings/update`: the engine takes the change before any later turn starts; the
/// thread's clients get `thread/settings/updated`.
pub(crate) async fn update(
    state: &AppState,
    params: ThreadSettingsUpdateParams,
) -> Result<EmptyResponse> {
    const METHOD: &str = "thread/settings/update";
    let thread = loaded(state, &params.thread_id).await?;
    let (sandbox, permission_profile) = requested_sandbox(
        state,
        METHOD,
        params.sandbox_policy,
        params.permissions.as_deref(),
    )?;
    let mode_settings = params.collaboration_mode.map(|mode| mode.settings);
    let change = SettingsChange {
        cwd: params.cwd,
        approval_policy: params.approval_policy,
        sandbox,
        permission_profile,
        model: params
            .model
            .or_else(|| mode_settings.as_ref().map(|s| s.model.clone())),
        effort: params
            .effort
            .or_else(|| mode_settings.and_then(|s| s.reasoning_effort)),
    };
    if let Some(op) = change.to_op() {
        thread.conversation.submit(op).await?;
    }
    let (settings, _changed) = thread.change_settings(&change);
    thread.broadcast_settings(settings).await;
    Ok(EmptyResponse::default())
}

/// `permissionProfile/list`: one built-in profile per sandbox mode, in one page.
pub(crate) fn permission_profiles(
    _params: PermissionProfileListParams,
) -> PermissionProfileListResponse {
    PermissionProfileListResponse {
        data: PERMISSION_PROFILES
            .iter()
            .map(|(id, _)| PermissionProfileSummary {
                id: (*id).to_string(),
                description: None,
                allowed: true,
            })
            .collect(),
        next_cursor: None,
    }
}
