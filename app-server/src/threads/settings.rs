//! What a loaded thread's next turn runs with, as clients see it: changed by `turn/start` and
//! `thread/settings/update` (each change also goes to the engine as one
//! `Op::OverrideTurnContext`) and reported by `thread/settings/updated`.

use std::path::PathBuf;

use keel_protocol::app_server::{
    ActivePermissionProfile, CollaborationMode, CollaborationModeSettings, SandboxPolicyV2,
    ThreadSettings, ThreadTurnSettings,
};
use keel_protocol::{AskForApproval, Op, ReasoningEffort};

/// A change to a thread's settings; `None` members stay as they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct SettingsChange {
    pub cwd: Option<PathBuf>,
    pub approval_policy: Option<AskForApproval>,
    /// The new sandbox, already resolved from a permission profile when one was named.
    pub sandbox: Option<SandboxPolicyV2>,
    /// The permission profile `sandbox` came from, if it came from one.
    pub permission_profile: Option<String>,
    pub model: Option<String>,
    pub effort: Option<ReasoningEffort>,
    /// The collaboration mode (`default` or `plan`), already checked; the engine hears of
    /// it through its own operation.
    pub collaboration_mode: Option<String>,
}

impl SettingsChange {
    /// Whether the change changes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.cwd.is_none()
            && self.approval_policy.is_none()
            && self.sandbox.is_none()
            && self.model.is_none()
            && self.effort.is_none()
    }

    /// The engine operation that makes the change, when there is one to make.
    pub(crate) fn to_op(&self) -> Option<Op> {
        (!self.is_empty()).then(|| Op::OverrideTurnContext {
            cwd: self.cwd.clone(),
            approval_policy: self.approval_policy,
            sandbox_policy: self.sandbox.clone().map(Into::into),
            model: self.model.clone(),
            effort: self.effort.clone(),
        })
    }
}

/// A thread's settings and the permission profile its sandbox was chosen by.
#[derive(Debug, Clone)]
pub(crate) struct CurrentSettings {
    pub settings: ThreadSettings,
    pub permission_profile: Option<String>,
    /// The collaboration mode (`default` or `plan`).
    pub collaboration_mode: String,
}

impl CurrentSettings {
    /// Applies `change`; `true` if anything is now different.
    pub(crate) fn apply(&mut self, change: &SettingsChange) -> bool {
        let before = (
            self.settings.clone(),
            self.permission_profile.clone(),
            self.collaboration_mode.clone(),
        );
        if let Some(mode) = &change.collaboration_mode {
            self.collaboration_mode.clone_from(mode);
        }
        let settings = &mut self.settings;
        if let Some(cwd) = &change.cwd {
            settings.cwd = cwd.clone();
        }
        if let Some(policy) = change.approval_policy {
            settings.approval_policy = policy;
        }
        if let Some(sandbox) = &change.sandbox {
            settings.sandbox = sandbox.clone();
            self.permission_profile = change.permission_profile.clone();
        }
        if let Some(model) = &change.model {
            settings.model = model.clone();
        }
        if let Some(effort) = change.effort.clone() {
            settings.reasoning_effort = Some(effort);
        }
        before
            != (
                self.settings.clone(),
                self.permission_profile.clone(),
                self.collaboration_mode.clone(),
            )
    }

    /// The settings in the shape of `thread/settings/updated`.
    pub(crate) fn turn_settings(&self) -> ThreadTurnSettings {
        let settings = &self.settings;
        ThreadTurnSettings {
            cwd: settings.cwd.clone(),
            approval_policy: settings.approval_policy,
            approvals_reviewer: settings.approvals_reviewer,
            sandbox_policy: settings.sandbox.clone(),
            active_permission_profile: self.permission_profile.as_ref().map(|id| {
                ActivePermissionProfile {
                    id: id.clone(),
                    extends: None,
                }
            }),
            model: settings.model.clone(),
            model_provider: settings.model_provider.clone(),
            effort: settings.reasoning_effort.clone(),
            collaboration_mode: CollaborationMode {
                mode: self.collaboration_mode.clone(),
                settings: CollaborationModeSettings {
                    model: settings.model.clone(),
                    reasoning_effort: settings.reasoning_effort.clone(),
                    developer_instructions: None,
                },
            },
            disabled_plugin_ids: Vec::new(),
            service_tier: None,
            summary: None,
        }
    }
}
