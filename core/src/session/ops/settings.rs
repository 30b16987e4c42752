//! The operations that change what the next turns run with: a collaboration mode, a user
//! turn's settings, and an override between turns.

use std::path::PathBuf;

use keel_protocol::{AskForApproval, CollaborationModeKind, ReasoningEffort, SandboxPolicy};

use super::super::Session;
use crate::turn_context::{PlanMode, TurnContext};

/// `Op::SetCollaborationMode`: plan mode runs read-only and keeps the sandbox to restore when
/// it ends; the default mode restores it.
pub(crate) fn set_collaboration_mode(
    session: &Session,
    mode: CollaborationModeKind,
    developer_instructions: Option<String>,
) {
    let mut context: TurnContext = (*session.turn_context()).clone();
    match (mode, context.plan_mode.take()) {
        (CollaborationModeKind::Plan, current) => {
            let sandbox_after = match current {
                Some(plan) => plan.sandbox_after,
                None => context.sandbox_policy.clone(),
            };
            context.sandbox_policy = SandboxPolicy::ReadOnly;
            context.plan_mode = Some(PlanMode {
                instructions: developer_instructions,
                sandbox_after,
            });
        }
        (CollaborationModeKind::Default, Some(plan)) => {
            context.sandbox_policy = plan.sandbox_after;
        }
        (CollaborationModeKind::Default, None) => {}
    }
    session.set_turn_context(context);
}

/// The settings an `Op::UserTurn` carries, taken before its input starts or joins a turn.
pub(crate) struct UserTurnSettings {
    pub cwd: PathBuf,
    pub approval_policy: AskForApproval,
    pub sandbox_policy: SandboxPolicy,
    pub model: String,
    pub effort: Option<ReasoningEffort>,
}

/// `Op::UserTurn`'s settings; in plan mode the sandbox applies once the mode ends.
pub(crate) fn apply_user_turn(session: &Session, settings: UserTurnSettings) {
    let mut context = (*session.turn_context()).clone();
    context.cwd = settings.cwd;
    context.approval_policy = settings.approval_policy;
    match context.plan_mode.as_mut() {
        Some(plan) => plan.sandbox_after = settings.sandbox_policy,
        None => context.sandbox_policy = settings.sandbox_policy,
    }
    context.client = context.client.with_model(settings.model, settings.effort);
    session.set_turn_context(context);
}

/// What an `Op::OverrideTurnContext` changes; `None` keeps the current value.
pub(crate) struct TurnOverrides {
    pub cwd: Option<PathBuf>,
    pub approval_policy: Option<AskForApproval>,
    pub sandbox_policy: Option<SandboxPolicy>,
    pub model: Option<String>,
    pub effort: Option<ReasoningEffort>,
}

/// `Op::OverrideTurnContext`: the next turns run with the overrides; in plan mode a new
/// sandbox applies once the mode ends.
pub(crate) fn override_turn_context(session: &Session, overrides: TurnOverrides) {
    let mut context: TurnContext = (*session.turn_context()).clone();
    if let Some(cwd) = overrides.cwd {
        context.cwd = cwd;
    }
    if let Some(policy) = overrides.approval_policy {
        context.approval_policy = policy;
    }
    if let Some(policy) = overrides.sandbox_policy {
        match context.plan_mode.as_mut() {
            Some(plan) => plan.sandbox_after = policy,
            None => context.sandbox_policy = policy,
        }
    }
    if overrides.model.is_some() || overrides.effort.is_some() {
        let model = overrides
            .model
            .unwrap_or_else(|| context.client.settings().model.clone());
        let effort = overrides
            .effort
            .or_else(|| context.client.settings().reasoning_effort.clone());
        context.client = context.client.with_model(model, effort);
    }
    session.set_turn_context(context);
}
