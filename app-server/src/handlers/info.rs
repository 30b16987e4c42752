//! `model/list` and `config/read`.

use keel_protocol::ReasoningEffort;
use keel_protocol::app_server::{
    ConfigReadParams, ConfigReadResponse, ConfigSnapshot, Model, ModelListParams,
    ModelListResponse, ReasoningEffortOption, ThreadOverrides,
};

use crate::error::Result;
use crate::state::AppState;

/// `model/list`: Keel has no model catalogue, so it lists the configured model.
pub(crate) fn model_list(state: &AppState, _params: ModelListParams) -> Result<ModelListResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let efforts = [
        (ReasoningEffort::Low, "Fast answers with light reasoning"),
        (ReasoningEffort::Medium, "Balanced speed and depth"),
        (
            ReasoningEffort::High,
            "Thorough reasoning for hard problems",
        ),
    ];
    let model = Model {
        id: config.model.clone(),
        model: config.model.clone(),
        display_name: config.model.clone(),
        description: format!("{} via {}", config.model, config.model_provider.name),
        hidden: false,
        is_default: true,
        default_reasoning_effort: config
            .model_reasoning_effort
            .unwrap_or(ReasoningEffort::Medium),
        supported_reasoning_efforts: efforts
            .into_iter()
            .map(|(effort, description)| ReasoningEffortOption {
                reasoning_effort: effort,
                description: description.to_string(),
            })
            .collect(),
    };
    Ok(ModelListResponse {
        data: vec![model],
        next_cursor: None,
    })
}

/// `config/read`: the effective configuration for a directory.
pub(crate) fn config_read(
    state: &AppState,
    params: ConfigReadParams,
) -> Result<ConfigReadResponse> {
    let overrides = ThreadOverrides {
        cwd: params.cwd,
        ..ThreadOverrides::default()
    };
    let config = state.resolve_config(&overrides)?;
    Ok(ConfigReadResponse {
        config: ConfigSnapshot {
            model: Some(config.model),
            model_provider: Some(config.model_provider_id),
            approval_policy: Some(config.approval_policy),
            sandbox_mode: Some(config.sandbox_policy.mode()),
            model_reasoning_effort: config.model_reasoning_effort,
            model_context_window: config.model_context_window,
            profile: config.active_profile,
            developer_instructions: config.developer_instructions,
            instructions: config.base_instructions,
        },
        origins: serde_json::Map::new(),
    })
}
