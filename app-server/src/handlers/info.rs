//! `config/read`.

use keel_protocol::app_server::{
    ConfigReadParams, ConfigReadResponse, ConfigSnapshot, ThreadOverrides,
};

use crate::error::Result;
use crate::state::AppState;

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

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ConfigRead, |ctx, p| Reply::now(&config_read(ctx.state, p)?));
