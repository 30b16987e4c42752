//! `skills/list`: the skills a thread started in each asked directory would be offered, with
//! the `SKILL.md` files that failed to load; `skills/config/write`: a skill turned on or off
//! in the user's `config.toml` (loaded threads see it from their next turn).

use std::path::Path;

use keel_core::config;
use keel_core::skills::{
    SkillInventory, load_skills, read_switches, skill_roots, switched, user_home, with_extra_roots,
};
use keel_protocol::app_server::{
    SkillErrorInfo, SkillMetadata, SkillsConfigWriteParams, SkillsConfigWriteResponse,
    SkillsListEntry, SkillsListParams, SkillsListResponse, ThreadOverrides,
};

use crate::error::{AppServerError, Result};
use crate::state::AppState;

/// `skills/list`: read from disk on every call (the folders are small), so a change shows at
/// once; no directory asked means the server's working directory.
pub(crate) fn skills_list(
    state: &AppState,
    params: SkillsListParams,
) -> Result<SkillsListResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let data = super::asked_dirs::asked_dirs(&config.cwd, params.cwds)
        .into_iter()
        .map(|(cwd, dir)| {
            let inventory = load_skills(&with_extra_roots(
                skill_roots(
                    &config.keel_home,
                    user_home().as_deref(),
                    &dir,
                    config.project_trusted(&dir),
                ),
                &config.extra_skill_roots,
            ))
            .with_switches(&config.skill_switches);
            entry(cwd, &inventory)
        })
        .collect();
    Ok(SkillsListResponse { data })
}

/// The protocol's view of an inventory.
fn entry(cwd: String, inventory: &SkillInventory) -> SkillsListEntry {
    SkillsListEntry {
        cwd,
        skills: inventory
            .skills
            .iter()
            .map(|skill| SkillMetadata {
                name: skill.name.clone(),
                description: skill.description.clone(),
                short_description: skill.short_description.clone(),
                path: skill.path.display().to_string(),
                scope: skill.scope,
                enabled: skill.enabled,
                plugin_id: skill.plugin_id.clone(),
            })
            .collect(),
        errors: inventory
            .errors
            .iter()
            .map(|error| SkillErrorInfo {
                path: error.path.display().to_string(),
                message: error.message.clone(),
            })
            .collect(),
    }
}

/// `skills/config/write`: replaces the user's entries for the chosen skill (by name or by
/// path) with one that turns it off, or with none to turn it on again.
pub(crate) fn skills_config_write(
    state: &AppState,
    params: SkillsConfigWriteParams,
) -> Result<SkillsConfigWriteResponse> {
    let invalid = |message: &str| AppServerError::InvalidParams {
        method: "skills/config/write".into(),
        message: message.into(),
    };
    let name = params.name.as_deref().filter(|name| !name.is_empty());
    let path = params.path.as_deref().map(Path::new);
    if name.is_none() && path.is_none() {
        return Err(invalid("give the skill's `name` or its `path`"));
    }
    if path.is_some_and(|path| !path.is_absolute()) {
        return Err(invalid("`path` must be the absolute path of a SKILL.md"));
    }
    let keel_home = state.keel_home();
    let user_file = keel_home.join(config::CONFIG_FILE_NAME);
    let env = state.config_env();
    {
        // One write at a time, so two clients' edits cannot interleave.
        let _writing = state.config_writes();
        let current = read_switches(&user_file).unwrap_or_default();
        let next = switched(&current, name, path, params.enabled);
        let value = if next.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::to_value(&next).map_err(|err| invalid(&err.to_string()))?
        };
        config::write_config_edits(
            keel_home,
            &[config::ConfigEdit {
                key_path: "skills.config".into(),
                value,
                merge: config::MergeStrategy::Replace,
            }],
            None,
            &env,
        )?;
    }
    Ok(SkillsConfigWriteResponse {
        effective_enabled: params.enabled,
    })
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(SkillsList, |ctx, p| Reply::now(&skills_list(ctx.state, p)?));
handle!(SkillsConfigWrite, |ctx, p| Reply::now(
    &skills_config_write(ctx.state, p)?
));
