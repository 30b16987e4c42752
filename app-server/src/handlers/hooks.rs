//! `hooks/list`: the hooks a thread started in each asked directory would have, with their
//! trust, so a client can show them and record the user's trust (`config/batchWrite` of
//! `hooks.state."KEY".trusted_hash`).

use keel_core::hooks::{HookInventory, load_hooks};
use keel_protocol::app_server::{
    HookMetadata, HooksListEntry, HooksListParams, HooksListResponse, ThreadOverrides,
};

use crate::error::Result;
use crate::state::AppState;

/// `hooks/list`: read from disk on every call; no directory asked means the server's.
pub(crate) fn hooks_list(state: &AppState, params: HooksListParams) -> Result<HooksListResponse> {
    let config = state.resolve_config(&ThreadOverrides::default())?;
    let data = super::asked_dirs::asked_dirs(&config.cwd, params.cwds)
        .into_iter()
        .map(|(cwd, dir)| {
            let inventory = load_hooks(&config.keel_home, &dir, config.project_trusted(&dir));
            entry(cwd, &inventory)
        })
        .collect();
    Ok(HooksListResponse { data })
}

fn entry(cwd: String, inventory: &HookInventory) -> HooksListEntry {
    HooksListEntry {
        cwd,
        hooks: inventory
            .hooks
            .iter()
            .map(|hook| HookMetadata {
                key: hook.key.clone(),
                event_name: hook.event.wire_name(),
                handler_type: "command".to_string(),
                command: hook.handler.command.clone(),
                is_async: hook.handler.is_async,
                matcher: hook.matcher.clone(),
                timeout_sec: hook.handler.timeout_secs,
                additional_context_limit: hook.handler.additional_context_limit,
                status_message: hook.handler.status_message.clone(),
                source: hook.source.wire_name().to_string(),
                source_path: hook.source_path.display().to_string(),
                display_order: u64::try_from(hook.display_order).unwrap_or(u64::MAX),
                enabled: hook.enabled,
                is_managed: false,
                current_hash: hook.current_hash.clone(),
                trust_status: hook.trust.wire_name().to_string(),
                plugin_id: hook.plugin_id.clone(),
            })
            .collect(),
        warnings: inventory.warnings.clone(),
        errors: Vec::new(),
    }
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(HooksList, |ctx, p| Reply::now(&hooks_list(ctx.state, p)?));
