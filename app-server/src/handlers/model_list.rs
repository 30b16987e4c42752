//! `model/list`: the model catalogue as Codex 0.171 pages it (listed entries by priority, the
//! first one the default, a cursor that is an offset), plus the configured model when the
//! catalogue does not name it. A custom provider whose model the catalogue does not know
//! lists only that model, as before the catalogue: its models are its own.

use keel_core::Config;
use keel_core::model_catalog::{ModelCatalog, ModelEntry};
use keel_protocol::ReasoningEffort;
use keel_protocol::app_server::{
    Model, ModelListParams, ModelListResponse, ModelServiceTier, ModelUpgradeInfo,
    ReasoningEffortOption, ThreadOverrides,
};

use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// `model/list`.
pub(crate) fn model_list(state: &AppState, params: ModelListParams) -> Result<ModelListResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    if let Some(provider) = &params.model_provider
        && !config.model_providers.contains_key(provider)
    {
        return Err(super::model_providers::not_configured(provider));
    }
    let models = models(&config, params.include_hidden.unwrap_or(false));
    page(models, params.cursor.as_deref(), params.limit)
}

/// Every model to list, in order.
fn models(config: &Config, include_hidden: bool) -> Vec<Model> {
    let catalog: &ModelCatalog = &config.model_catalog;
    let configured_known = catalog.find(&config.model).is_some();
    if !configured_known && !config.model_provider.requires_openai_auth {
        return vec![configured_only(config)];
    }
    let default = catalog
        .entries()
        .iter()
        .find(|entry| entry.is_listed())
        .map(|entry| entry.slug.clone());
    let mut models: Vec<Model> = catalog
        .entries()
        .iter()
        .filter(|entry| include_hidden || entry.is_listed())
        .map(|entry| from_entry(entry, default.as_deref() == Some(entry.slug.as_str())))
        .collect();
    if !configured_known {
        let mut own = configured_only(config);
        own.is_default = false;
        models.push(own);
    }
    models
}

/// A catalogue entry as pickers show it.
fn from_entry(entry: &ModelEntry, is_default: bool) -> Model {
    let efforts: Vec<ReasoningEffortOption> = entry
        .supported_reasoning_levels
        .iter()
        .flatten()
        .map(|option| ReasoningEffortOption {
            reasoning_effort: option.effort.clone(),
            description: option.description.clone(),
        })
        .collect();
    Model {
        id: entry.slug.clone(),
        model: entry.slug.clone(),
        display_name: entry
            .display_name
            .clone()
            .unwrap_or_else(|| entry.slug.clone()),
        description: entry.description.clone().unwrap_or_default(),
        hidden: !entry.is_listed(),
        is_default,
        // A catalogue entry without a default shows `none`, as Codex shows it.
        default_reasoning_effort: entry
            .default_reasoning_level
            .clone()
            .unwrap_or(ReasoningEffort::NONE),
        supported_reasoning_efforts: efforts,
        upgrade: entry.upgrade.as_ref().map(|upgrade| upgrade.model.clone()),
        upgrade_info: entry.upgrade.as_ref().map(|upgrade| ModelUpgradeInfo {
            model: upgrade.model.clone(),
            upgrade_copy: None,
            model_link: None,
            migration_markdown: None,
            retirement_at: None,
        }),
        availability_nux: None,
        model_specialty: None,
        input_modalities: entry
            .input_modalities
            .clone()
            .unwrap_or_else(|| vec!["text".into(), "image".into()]),
        supports_personality: false,
        multi_agent_version: entry.multi_agent_version.clone(),
        additional_speed_tiers: entry.additional_speed_tiers.clone().unwrap_or_default(),
        service_tiers: entry
            .service_tiers
            .iter()
            .flatten()
            .map(|tier| ModelServiceTier {
                id: tier.id.clone(),
                name: tier.name.clone(),
                description: tier.description.clone(),
            })
            .collect(),
        default_service_tier: None,
        available_access_programs: None,
    }
}

/// The configured model when the catalogue does not name it: the usual three efforts.
fn configured_only(config: &Config) -> Model {
    let efforts = [
        (ReasoningEffort::LOW, "Fast answers with light reasoning"),
        (ReasoningEffort::MEDIUM, "Balanced speed and depth"),
        (
            ReasoningEffort::HIGH,
            "Thorough reasoning for hard problems",
        ),
    ];
    Model {
        id: config.model.clone(),
        model: config.model.clone(),
        display_name: config.model.clone(),
        description: format!("{} via {}", config.model, config.model_provider.name),
        hidden: false,
        is_default: true,
        default_reasoning_effort: config
            .model_reasoning_effort
            .clone()
            .unwrap_or(ReasoningEffort::MEDIUM),
        supported_reasoning_efforts: efforts
            .into_iter()
            .map(|(effort, description)| ReasoningEffortOption {
                reasoning_effort: effort,
                description: description.to_string(),
            })
            .collect(),
        upgrade: None,
        upgrade_info: None,
        availability_nux: None,
        model_specialty: None,
        input_modalities: vec!["text".into(), "image".into()],
        supports_personality: false,
        multi_agent_version: None,
        additional_speed_tiers: Vec::new(),
        service_tiers: Vec::new(),
        default_service_tier: None,
        available_access_programs: None,
    }
}

/// One page: `cursor` is an offset into the list (Codex's), `limit` at least 1, every model
/// when absent.
fn page(models: Vec<Model>, cursor: Option<&str>, limit: Option<u32>) -> Result<ModelListResponse> {
    let total = models.len();
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let start: usize = cursor
                .parse()
                .map_err(|_| AppServerError::InvalidRequest(format!("invalid cursor: {cursor}")))?;
            if start > total {
                return Err(AppServerError::InvalidRequest(format!(
                    "cursor {start} exceeds total models {total}"
                )));
            }
            start
        }
    };
    let size = limit.map_or(total, |limit| {
        usize::try_from(limit.max(1)).unwrap_or(total)
    });
    let end = start.saturating_add(size).min(total);
    let next_cursor = (end < total).then(|| end.to_string());
    Ok(ModelListResponse {
        data: models.into_iter().skip(start).take(end - start).collect(),
        next_cursor,
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(ModelList, |ctx, p| Reply::now(&model_list(ctx.state, p)?));
