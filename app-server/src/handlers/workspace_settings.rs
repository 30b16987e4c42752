//! `skills/extraRoots/set` and `experimentalFeature/enablement/set`: switches a client sets
//! for the server's lifetime (never written to `config.toml`, as in Codex); threads started
//! afterwards, and `skills/list` / `experimentalFeature/list`, see them.

use std::sync::Arc;

use keel_protocol::app_server::{
    EmptyResponse, ExperimentalFeatureEnablement, ServerNotification, SkillsChangedNotification,
    SkillsExtraRootsSetParams,
};

use super::Reply;
use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::state::AppState;

/// Replaces the extra roots; `skills/changed` goes out before the answer (as Codex sends it),
/// so a client that lists skills on either sees the new ones.
async fn set_extra_roots(
    state: &AppState,
    params: SkillsExtraRootsSetParams,
    outgoing: &Arc<Outgoing>,
) -> Result<Reply> {
    if let Some(relative) = params.extra_roots.iter().find(|root| !root.is_absolute()) {
        return Err(AppServerError::InvalidParams {
            method: "skills/extraRoots/set".into(),
            message: format!(
                "extraRoots: `{}` is not an absolute path",
                relative.display()
            ),
        });
    }
    *state
        .extra_skill_roots
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = params.extra_roots;
    outgoing
        .notify(ServerNotification::SkillsChanged(
            SkillsChangedNotification {},
        ))
        .await;
    Reply::now(&EmptyResponse {})
}

/// Keeps the switches of the features Keel has (the names `experimentalFeature/list` gives)
/// and answers with those; other names are dropped, as Codex drops names outside its list.
fn set_enablement(
    state: &AppState,
    params: ExperimentalFeatureEnablement,
) -> ExperimentalFeatureEnablement {
    let known: Vec<&str> = keel_core::features()
        .iter()
        .map(|feature| feature.name)
        .collect();
    let enablement: std::collections::BTreeMap<String, bool> = params
        .enablement
        .into_iter()
        .filter(|(name, _)| known.contains(&name.as_str()))
        .collect();
    state
        .feature_enablement
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend(enablement.clone());
    ExperimentalFeatureEnablement { enablement }
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(SkillsExtraRootsSet, |ctx, p| set_extra_roots(
    ctx.state,
    p,
    ctx.outgoing()
)
.await);
handle!(ExperimentalFeatureEnablementSet, |ctx, p| Reply::now(
    &set_enablement(ctx.state, p)
));
