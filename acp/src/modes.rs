//! The session's pickers: its mode (what the agent may do without asking: as configured,
//! read only, workspace, full access — never more than the configuration allows — or plan),
//! its model and its reasoning effort. A change holds from the next turn on
//! (`thread/settings/update`).

use keel_protocol::acp::{
    SessionConfigOption, SessionConfigSelectOption, SessionMode, SessionModeState,
};
use keel_protocol::app_server::{
    CollaborationMode, CollaborationModeSettings, Model, SandboxPolicyV2, ThreadSettings,
    ThreadSettingsUpdateParams,
};
use keel_protocol::{AskForApproval, INVALID_PARAMS, JsonRpcErrorObject, ReasoningEffort};

/// What a session's pickers stand on.
#[derive(Debug, Clone)]
pub(crate) struct Pickers {
    /// The settings the session started with (the "as configured" mode).
    configured: ThreadSettings,
    /// The models of the catalogue.
    models: Vec<Model>,
    /// The mode now.
    pub(crate) mode: String,
    /// The model now.
    model: String,
    /// The reasoning effort now.
    effort: Option<ReasoningEffort>,
}

/// A mode: id, name, description.
type ModeSpec = (&'static str, &'static str, &'static str);

const AS_CONFIGURED: ModeSpec = (
    "default",
    "As configured",
    "config.toml's approval policy and sandbox",
);
const READ_ONLY: ModeSpec = (
    "read-only",
    "Read only",
    "reads anything; asks before any command that could change something",
);
const WORKSPACE: ModeSpec = (
    "auto",
    "Workspace",
    "edits and runs commands in the workspace without asking; asks to go beyond it",
);
const FULL_ACCESS: ModeSpec = (
    "full-access",
    "Full access",
    "runs anything without asking, with no sandbox",
);
const PLAN: ModeSpec = (
    "plan",
    "Plan",
    "explores and proposes a plan; changes nothing",
);

impl Pickers {
    pub(crate) fn new(configured: ThreadSettings, models: Vec<Model>) -> Self {
        Self {
            model: configured.model.clone(),
            effort: configured.reasoning_effort.clone(),
            configured,
            models,
            mode: AS_CONFIGURED.0.to_string(),
        }
    }

    /// The modes this session may take: never more than its configuration allows.
    fn modes(&self) -> Vec<ModeSpec> {
        let mut modes = vec![AS_CONFIGURED, READ_ONLY];
        match self.configured.sandbox {
            SandboxPolicyV2::DangerFullAccess => modes.extend([WORKSPACE, FULL_ACCESS]),
            SandboxPolicyV2::WorkspaceWrite { .. } => modes.push(WORKSPACE),
            SandboxPolicyV2::ReadOnly { .. } => {}
        }
        modes.push(PLAN);
        modes
    }

    /// The legacy mode list.
    pub(crate) fn mode_state(&self) -> SessionModeState {
        SessionModeState {
            current_mode_id: self.mode.clone(),
            available_modes: self
                .modes()
                .into_iter()
                .map(|(id, name, description)| SessionMode {
                    id: id.to_string(),
                    name: name.to_string(),
                    description: Some(description.to_string()),
                })
                .collect(),
        }
    }

    /// Every picker as it is now.
    pub(crate) fn options(&self) -> Vec<SessionConfigOption> {
        let select =
            |value: &str, name: &str, description: Option<String>| SessionConfigSelectOption {
                value: value.to_string(),
                name: name.to_string(),
                description,
            };
        let mut options = vec![SessionConfigOption {
            id: "mode".to_string(),
            name: "Mode".to_string(),
            description: Some("What the agent may do without asking".to_string()),
            category: Some("mode".to_string()),
            kind: "select".to_string(),
            current_value: self.mode.clone(),
            options: self
                .modes()
                .into_iter()
                .map(|(id, name, description)| select(id, name, Some(description.to_string())))
                .collect(),
        }];
        let mut models: Vec<SessionConfigSelectOption> = self
            .models
            .iter()
            .map(|model| select(&model.model, &model.display_name, None))
            .collect();
        if !models.iter().any(|option| option.value == self.model) {
            models.insert(0, select(&self.model, &self.model, None));
        }
        options.push(SessionConfigOption {
            id: "model".to_string(),
            name: "Model".to_string(),
            description: None,
            category: Some("model".to_string()),
            kind: "select".to_string(),
            current_value: self.model.clone(),
            options: models,
        });
        let efforts: Vec<SessionConfigSelectOption> = self
            .current_model()
            .map(|model| {
                model
                    .supported_reasoning_efforts
                    .iter()
                    .map(|effort| {
                        select(
                            effort.reasoning_effort.as_str(),
                            effort.reasoning_effort.as_str(),
                            Some(effort.description.clone()).filter(|text| !text.is_empty()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let current_effort = self.effort.clone().or_else(|| {
            self.current_model()
                .map(|model| model.default_reasoning_effort.clone())
        });
        if let Some(current) = current_effort.filter(|_| !efforts.is_empty()) {
            options.push(SessionConfigOption {
                id: "reasoning_effort".to_string(),
                name: "Reasoning effort".to_string(),
                description: None,
                category: Some("thought_level".to_string()),
                kind: "select".to_string(),
                current_value: current.as_str().to_string(),
                options: efforts,
            });
        }
        options
    }

    fn current_model(&self) -> Option<&Model> {
        self.models.iter().find(|model| model.model == self.model)
    }

    /// Applies a picker's new value; the settings update that carries it out.
    pub(crate) fn set(
        &mut self,
        thread_id: &str,
        config_id: &str,
        value: &str,
    ) -> Result<ThreadSettingsUpdateParams, JsonRpcErrorObject> {
        let invalid = |message: String| JsonRpcErrorObject::new(INVALID_PARAMS, message);
        let mut update = empty_update(thread_id);
        match config_id {
            "mode" => {
                let Some((id, ..)) = self.modes().into_iter().find(|(id, ..)| *id == value) else {
                    return Err(invalid(format!(
                        "mode `{value}` is not offered in this session"
                    )));
                };
                let default_mode = |model: &str| collaboration("default", model);
                let (approval, sandbox, collaboration_mode) = match id {
                    "read-only" => (
                        Some(AskForApproval::OnRequest),
                        Some(SandboxPolicyV2::ReadOnly {
                            network_access: false,
                        }),
                        default_mode(&self.model),
                    ),
                    "auto" => (
                        Some(AskForApproval::OnRequest),
                        Some(SandboxPolicyV2::WorkspaceWrite {
                            writable_roots: Vec::new(),
                            network_access: false,
                            exclude_tmpdir_env_var: false,
                            exclude_slash_tmp: false,
                        }),
                        default_mode(&self.model),
                    ),
                    "full-access" => (
                        Some(AskForApproval::Never),
                        Some(SandboxPolicyV2::DangerFullAccess),
                        default_mode(&self.model),
                    ),
                    "plan" => (None, None, collaboration("plan", &self.model)),
                    _ => (
                        Some(self.configured.approval_policy),
                        Some(self.configured.sandbox.clone()),
                        default_mode(&self.model),
                    ),
                };
                update.approval_policy = approval;
                update.sandbox_policy = sandbox;
                update.collaboration_mode = Some(collaboration_mode);
                self.mode = id.to_string();
            }
            "model" => {
                if !self.models.iter().any(|model| model.model == value) && value != self.model {
                    return Err(invalid(format!("model `{value}` is not in the catalogue")));
                }
                self.model = value.to_string();
                update.model = Some(self.model.clone());
            }
            "reasoning_effort" => {
                let effort = ReasoningEffort::new(value)
                    .map_err(|err| invalid(format!("reasoning_effort: {err}")))?;
                let supported = self.current_model().is_none_or(|model| {
                    model
                        .supported_reasoning_efforts
                        .iter()
                        .any(|option| option.reasoning_effort == effort)
                });
                if !supported {
                    return Err(invalid(format!(
                        "reasoning effort `{value}` is not offered for {}",
                        self.model
                    )));
                }
                self.effort = Some(effort.clone());
                update.effort = Some(effort);
            }
            other => return Err(invalid(format!("unknown config option `{other}`"))),
        }
        Ok(update)
    }
}

fn collaboration(mode: &str, model: &str) -> CollaborationMode {
    CollaborationMode {
        mode: mode.to_string(),
        settings: CollaborationModeSettings {
            model: model.to_string(),
            reasoning_effort: None,
            developer_instructions: None,
        },
    }
}

fn empty_update(thread_id: &str) -> ThreadSettingsUpdateParams {
    ThreadSettingsUpdateParams {
        thread_id: thread_id.to_string(),
        cwd: None,
        approval_policy: None,
        approvals_reviewer: None,
        sandbox_policy: None,
        permissions: None,
        model: None,
        effort: None,
        collaboration_mode: None,
        environments: None,
    }
}
