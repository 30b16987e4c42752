//! What a client asks once at start-up besides models and config (Codex 0.169's TUI among
//! them): the account, administrator requirements, feature switches and collaboration modes.
//! Keel has no ChatGPT login or requirements, so these answer honestly with API-key
//! authentication and empty lists (skills, hooks and plugins have their own modules).

use keel_protocol::app_server::{
    Account, CheckGovCloudRequirementsResponse, CollaborationModeListResponse,
    CollaborationModeMask, ConfigRequirementsReadResponse, ExperimentalFeature,
    ExperimentalFeatureListResponse, ExperimentalFeatureStage, GetAccountResponse, ThreadOverrides,
};

use crate::error::Result;
use crate::state::AppState;

/// `account/read`: an API key when the configured provider takes one, else no account.
pub(crate) fn account_read(state: &AppState) -> Result<GetAccountResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    Ok(GetAccountResponse {
        account: config
            .model_provider
            .env_key
            .is_some()
            .then_some(Account::ApiKey),
        requires_openai_auth: false,
        user_id: None,
    })
}

/// `account/bedrock/checkGovCloudRequirements`: never GovCloud.
pub(crate) fn check_gov_cloud() -> CheckGovCloudRequirementsResponse {
    CheckGovCloudRequirementsResponse::default()
}

/// `configRequirements/read`: no requirements.
pub(crate) fn config_requirements() -> ConfigRequirementsReadResponse {
    ConfigRequirementsReadResponse {
        requirements: None,
        supports_independent_speed_modes: Some(false),
    }
}

/// `experimentalFeature/list`: the `[features]` switches Keel reads (one page), all stable,
/// with their state under the server's configuration.
pub(crate) fn experimental_features(state: &AppState) -> Result<ExperimentalFeatureListResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let data = keel_core::features()
        .iter()
        .map(|feature| {
            let default_enabled = feature.default.unwrap_or(true);
            ExperimentalFeature {
                name: feature.name.to_string(),
                stage: ExperimentalFeatureStage::Stable,
                display_name: None,
                description: Some(feature.about.to_string()),
                announcement: None,
                default_enabled,
                enabled: feature.state_in(&config).unwrap_or(default_enabled),
            }
        })
        .collect();
    Ok(ExperimentalFeatureListResponse {
        data,
        next_cursor: None,
    })
}

/// `collaborationMode/list`: the default mode only.
pub(crate) fn collaboration_modes() -> CollaborationModeListResponse {
    CollaborationModeListResponse {
        data: vec![
            CollaborationModeMask {
                name: "Plan".to_string(),
                mode: "plan".to_string(),
                model: None,
                reasoning_effort: Some(keel_protocol::ReasoningEffort::MEDIUM),
            },
            CollaborationModeMask {
                name: "Default".to_string(),
                mode: "default".to_string(),
                model: None,
                reasoning_effort: None,
            },
        ],
    }
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(Initialize, |_, _| Err(
    crate::error::AppServerError::AlreadyInitialized
));
handle!(AccountRead, |ctx, _| Reply::now(&account_read(ctx.state)?));
handle!(AppList, |_, _| Reply::now(
    &keel_protocol::app_server::AppsListResponse::default()
));
handle!(WindowsSandboxReadiness, |_, _| Reply::now(
    &keel_protocol::app_server::WindowsSandboxReadinessResponse {
        status: "notConfigured".to_string(),
    }
));
handle!(AccountBedrockCheckGovCloudRequirements, |_, _| Reply::now(
    &check_gov_cloud()
));
handle!(ConfigRequirementsRead, |_, _| Reply::now(
    &config_requirements()
));
handle!(ExperimentalFeatureList, |ctx, _| Reply::now(
    &experimental_features(ctx.state)?
));
handle!(CollaborationModeList, |_, _| Reply::now(
    &collaboration_modes()
));
