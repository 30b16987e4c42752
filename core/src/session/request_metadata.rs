//! What a model request tells the provider about itself (Codex 0.171's `client_metadata`
//! and metadata headers): the installation, thread, turn, context window, agent and sandbox,
//! from the session's state and the turn's context.

use super::Session;
use crate::client::RequestMetadata;
use crate::turn_context::{TurnContext, TurnIds};

/// Who a request of turn `ids` made with `context` is for, told to the provider.
pub(crate) fn request_metadata(
    session: &Session,
    ids: &TurnIds,
    context: &TurnContext,
    request_kind: &'static str,
) -> RequestMetadata {
    let settings = context.client.settings();
    let installation_id = crate::installation_id::installation_id(&context.keel_home());
    let state = session.state();
    RequestMetadata {
        installation_id,
        thread_id: session.id.to_string(),
        session_id: context.origin.as_ref().map_or_else(
            || session.id.to_string(),
            |origin| origin.root_thread.clone(),
        ),
        parent: context
            .origin
            .as_ref()
            .map(|origin| (origin.parent_thread.clone(), origin.parent_turn.clone())),
        turn_id: ids.turn_id.to_string(),
        root_turn_id: context
            .origin
            .as_ref()
            .and_then(|origin| origin.root_turn.clone())
            .unwrap_or_else(|| ids.turn_id.to_string()),
        window_number: state.window_number,
        context_window_id: state.context_window_id.clone(),
        history_initialization: state.history_initialization,
        agent_name: context.agent_path.clone(),
        request_kind,
        turn_trigger: context.turn_trigger.to_string(),
        sandbox_mode: match &context.sandbox_policy {
            keel_protocol::SandboxPolicy::DangerFullAccess => "danger-full-access",
            keel_protocol::SandboxPolicy::ReadOnly => "read-only",
            keel_protocol::SandboxPolicy::WorkspaceWrite { .. } => "workspace-write",
        }
        .to_string(),
        model: settings.model.clone(),
        reasoning_effort: settings
            .reasoning_effort
            .clone()
            .or_else(|| {
                crate::model_family::family(&settings.catalog, &settings.model).default_effort
            })
            .map(|effort| effort.as_str().to_string()),
        turn_started_at_unix_ms: ids.started_at_ms,
    }
}
