//! `skills/list`: the skills a thread started in each asked directory would be offered, with
//! the `SKILL.md` files that failed to load.

use keel_core::skills::{SkillInventory, load_skills, skill_roots, user_home};
use keel_protocol::app_server::{
    SkillErrorInfo, SkillMetadata, SkillsListEntry, SkillsListParams, SkillsListResponse,
    ThreadOverrides,
};

use crate::error::Result;
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
            let inventory = load_skills(&skill_roots(
                &config.keel_home,
                user_home().as_deref(),
                &dir,
                config.project_trusted(&dir),
            ));
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
                enabled: true,
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
