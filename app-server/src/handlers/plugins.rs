//! Plugins and marketplaces over the app-server, as Codex 0.171 answers them under API-key
//! authentication: local and git marketplaces work in full; what needs a ChatGPT account's
//! remote catalogue (`remoteMarketplaceName`, remote plugin ids, remote skills) is refused
//! with `-32600` saying so. The work (files and `git`) runs on a blocking thread.

use std::path::{Path, PathBuf};

use keel_core::plugins::{
    InstalledPlugin, MarketplaceEntry, PluginCatalog, PluginError, PluginId, PluginListing,
    PluginManifest, PluginSource, PluginStatus, add_marketplace, install_entry, load_catalog,
    read_marketplace_file, read_plugin_manifest, remove_marketplace, uninstall_plugin,
    upgrade_marketplaces,
};
use keel_core::skills::{SkillRoot, SkillScope, load_skills};
use keel_protocol::app_server::{
    EmptyResponse, MarketplaceAddParams, MarketplaceAddResponse, MarketplaceInterface,
    MarketplaceLoadErrorInfo, MarketplaceRemoveParams, MarketplaceRemoveResponse,
    MarketplaceUpgradeErrorInfo, MarketplaceUpgradeParams, MarketplaceUpgradeResponse,
    PluginDetail, PluginHookSummary, PluginInstallParams, PluginInstallResponse,
    PluginInstalledParams, PluginInstalledResponse, PluginInterface, PluginListParams,
    PluginListResponse, PluginMarketplaceEntry, PluginReadParams, PluginReadResponse,
    PluginReconcileResponse, PluginSkillReadParams, PluginSkillSummary, PluginSourceInfo,
    PluginSummary, PluginUninstallParams,
};

use crate::error::{AppServerError, Result};

/// The message Codex gives for anything that needs the remote catalogue.
const NEEDS_ACCOUNT: &str = "chatgpt authentication required for remote plugin catalog; Keel \
                             uses API keys and lists local and git marketplaces only";

fn refused(err: PluginError) -> AppServerError {
    AppServerError::InvalidRequest(err.to_string())
}

/// Runs `work` on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| AppServerError::Internal(format!("plugin work failed: {err}")))?
}

fn wire_name<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn source_info(source: &PluginSource) -> PluginSourceInfo {
    match source {
        PluginSource::Local(path) => PluginSourceInfo::Local { path: path.clone() },
        PluginSource::Remote { kind, details, .. } => {
            let text = |key: &str| {
                details
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            match kind.as_str() {
                "npm" => PluginSourceInfo::Npm {
                    package: text("package").unwrap_or_default(),
                    registry: text("registry"),
                    version: text("version"),
                },
                _ => PluginSourceInfo::Git {
                    url: text("url").unwrap_or_default(),
                    path: text("path"),
                    ref_name: text("ref"),
                    sha: text("sha"),
                },
            }
        }
    }
}

/// The manifest of a listed plugin: the installed copy's, else the source's (`None` when
/// neither reads).
fn manifest_of(listing: &PluginListing) -> Option<PluginManifest> {
    let dir = listing
        .installed_path
        .clone()
        .or(match &listing.entry.source {
            PluginSource::Local(dir) => Some(dir.clone()),
            PluginSource::Remote { .. } => None,
        })?;
    read_plugin_manifest(&dir, &listing.id.plugin).ok()
}

fn interface_of(
    manifest: Option<&PluginManifest>,
    category: Option<&String>,
) -> Option<PluginInterface> {
    let declared = manifest.and_then(|manifest| manifest.interface.clone());
    if declared.is_none() && category.is_none() {
        return None;
    }
    let declared = declared.unwrap_or_default();
    Some(PluginInterface {
        display_name: declared.display_name,
        short_description: declared.short_description,
        long_description: declared.long_description,
        developer_name: declared.developer_name,
        category: declared.category.or_else(|| category.cloned()),
        capabilities: declared.capabilities,
        website_url: declared.website_url,
        privacy_policy_url: declared.privacy_policy_url,
        terms_of_service_url: declared.terms_of_service_url,
        default_prompt: declared.default_prompt,
        brand_color: declared.brand_color,
        ..PluginInterface::default()
    })
}

fn summary(listing: &PluginListing) -> PluginSummary {
    let manifest = manifest_of(listing);
    PluginSummary {
        id: listing.id.to_string(),
        remote_plugin_id: None,
        version: None,
        local_version: manifest.as_ref().and_then(|m| m.version.clone()),
        name: listing.id.plugin.clone(),
        share_context: None,
        source: source_info(&listing.entry.source),
        installed: listing.status != PluginStatus::Available,
        installed_at: None,
        enabled: listing.status == PluginStatus::Enabled,
        install_policy: wire_name(listing.entry.install_policy),
        install_policy_source: None,
        must_show_installation_interstitial: None,
        auth_policy: wire_name(listing.entry.auth_policy),
        availability: "AVAILABLE".to_string(),
        disabled_reason: None,
        eligible_plan_types: None,
        interface: interface_of(manifest.as_ref(), listing.entry.category.as_ref()),
        keywords: manifest.map(|m| m.keywords).unwrap_or_default(),
    }
}

fn load_errors(catalog: &PluginCatalog) -> Vec<MarketplaceLoadErrorInfo> {
    catalog
        .load_errors
        .iter()
        .map(|(path, message)| MarketplaceLoadErrorInfo {
            marketplace_path: path.clone(),
            message: message.clone(),
        })
        .collect()
}

fn entries(catalog: &PluginCatalog, only_installed: bool) -> Vec<PluginMarketplaceEntry> {
    catalog
        .marketplaces
        .iter()
        .filter_map(|listing| {
            let plugins: Vec<PluginSummary> = listing
                .plugins
                .iter()
                .filter(|plugin| !only_installed || plugin.status != PluginStatus::Available)
                .map(summary)
                .collect();
            (!only_installed || !plugins.is_empty()).then(|| PluginMarketplaceEntry {
                name: listing.marketplace.name.clone(),
                path: Some(listing.marketplace.manifest_path.clone()),
                interface: listing
                    .marketplace
                    .display_name
                    .clone()
                    .map(|display_name| MarketplaceInterface {
                        display_name: Some(display_name),
                    }),
                plugins,
            })
        })
        .collect()
}

/// `plugin/list`: the added marketplaces and those of the asked directories; a remote kind
/// of marketplace needs an account, `local` (or none asked) is what Keel has.
pub(crate) async fn plugin_list(
    home: PathBuf,
    params: PluginListParams,
) -> Result<PluginListResponse> {
    let kinds = params.marketplace_kinds.unwrap_or_default();
    if kinds
        .iter()
        .any(|kind| matches!(kind.as_str(), "shared-with-me" | "created-by-me-remote"))
    {
        return Err(AppServerError::InvalidRequest(format!(
            "list remote plugin catalog: {NEEDS_ACCOUNT}"
        )));
    }
    if !kinds.is_empty() && !kinds.iter().any(|kind| kind == "local") {
        return Ok(PluginListResponse::default());
    }
    let cwds = params.cwds.unwrap_or_default();
    blocking(move || {
        let catalog = load_catalog(&home, &cwds).map_err(refused)?;
        Ok(PluginListResponse {
            marketplaces: entries(&catalog, false),
            marketplace_load_errors: load_errors(&catalog),
            featured_plugin_ids: Vec::new(),
        })
    })
    .await
}

/// `plugin/installed`: `plugin/list` narrowed to installed plugins.
pub(crate) async fn plugin_installed(
    home: PathBuf,
    params: PluginInstalledParams,
) -> Result<PluginInstalledResponse> {
    let cwds = params.cwds.unwrap_or_default();
    blocking(move || {
        let catalog = load_catalog(&home, &cwds).map_err(refused)?;
        Ok(PluginInstalledResponse {
            marketplaces: entries(&catalog, true),
            marketplace_load_errors: load_errors(&catalog),
        })
    })
    .await
}

/// The marketplace manifest a request names; exactly one of the path and a remote name.
fn local_marketplace(method: &str, path: Option<&Path>, remote: Option<&str>) -> Result<PathBuf> {
    match (path, remote) {
        (Some(path), None) => {
            if !path.is_absolute() {
                return Err(AppServerError::InvalidRequest(format!(
                    "{method}: marketplacePath must be absolute, not `{}`",
                    path.display()
                )));
            }
            Ok(path.to_path_buf())
        }
        (None, Some(_)) => Err(AppServerError::InvalidRequest(format!(
            "read remote plugin details: {NEEDS_ACCOUNT}"
        ))),
        _ => Err(AppServerError::InvalidRequest(format!(
            "{method} requires exactly one of marketplacePath or remoteMarketplaceName"
        ))),
    }
}

fn entry_of(manifest: &Path, plugin: &str) -> Result<(PluginId, MarketplaceEntry, PathBuf)> {
    let marketplace = read_marketplace_file(manifest).map_err(refused)?;
    let entry = marketplace.entry(plugin).cloned().ok_or_else(|| {
        refused(PluginError::PluginNotFound {
            plugin: plugin.to_string(),
            marketplace: marketplace.name.clone(),
        })
    })?;
    let id = PluginId {
        plugin: plugin.to_string(),
        marketplace: marketplace.name,
    };
    Ok((id, entry, marketplace.manifest_path))
}

/// `plugin/read`: the plugin as its source says (skills, hooks, MCP servers), with its
/// installed state.
pub(crate) async fn plugin_read(
    home: PathBuf,
    params: PluginReadParams,
) -> Result<PluginReadResponse> {
    let manifest_path = local_marketplace(
        "plugin/read",
        params.marketplace_path.as_deref(),
        params.remote_marketplace_name.as_deref(),
    )?;
    blocking(move || {
        let (id, entry, manifest_path) = entry_of(&manifest_path, &params.plugin_name)?;
        let catalog = load_catalog(&home, &[]).map_err(refused)?;
        let listing = catalog.plugin(&id).cloned().unwrap_or(PluginListing {
            id: id.clone(),
            entry: entry.clone(),
            status: PluginStatus::Available,
            installed_path: None,
            installed_version: None,
        });
        let summary = summary(&listing);
        let (skills, hooks, mcp_servers, description) = match &entry.source {
            PluginSource::Local(dir) => {
                let manifest = read_plugin_manifest(dir, &id.plugin).map_err(refused)?;
                let plugin = InstalledPlugin {
                    id: id.clone(),
                    dir: dir.clone(),
                    version: manifest.version.clone().unwrap_or_else(|| "local".into()),
                    manifest,
                };
                let roots: Vec<SkillRoot> = plugin
                    .skill_dirs()
                    .iter()
                    .map(|dir| SkillRoot {
                        dir: dir.clone(),
                        scope: SkillScope::User,
                        plugin: Some(id.to_string()),
                    })
                    .collect();
                let skills = load_skills(&roots)
                    .skills
                    .into_iter()
                    .map(|skill| PluginSkillSummary {
                        name: skill.name,
                        description: skill.description,
                        short_description: skill.short_description,
                        interface: None,
                        path: Some(skill.path.display().to_string()),
                        enabled: skill.enabled,
                    })
                    .collect();
                let (keys, _) = keel_core::hooks::plugin_hook_keys(&plugin, &home);
                let hooks = keys
                    .into_iter()
                    .map(|(key, event)| PluginHookSummary {
                        key,
                        event_name: event.wire_name(),
                    })
                    .collect();
                let servers = keel_core::config::plugin_mcp_servers(&plugin)
                    .map(|servers| servers.into_keys().collect())
                    .unwrap_or_default();
                (skills, hooks, servers, plugin.manifest.description.clone())
            }
            PluginSource::Remote { .. } => (Vec::new(), Vec::new(), Vec::new(), None),
        };
        Ok(PluginReadResponse {
            plugin: PluginDetail {
                marketplace_name: id.marketplace.clone(),
                marketplace_path: Some(manifest_path),
                summary,
                share_url: None,
                description,
                skills,
                onboarding_skill: None,
                hooks,
                apps: Vec::new(),
                app_templates: Vec::new(),
                mcp_servers,
                scheduled_tasks: None,
            },
        })
    })
    .await
}

/// `plugin/install`: from any marketplace manifest (an added one, or a repository's own).
pub(crate) async fn plugin_install(
    home: PathBuf,
    params: PluginInstallParams,
) -> Result<PluginInstallResponse> {
    let manifest_path = local_marketplace(
        "plugin/install",
        params.marketplace_path.as_deref(),
        params.remote_marketplace_name.as_deref(),
    )?;
    blocking(move || {
        let (id, entry, _) = entry_of(&manifest_path, &params.plugin_name)?;
        let record = install_entry(&home, &id, &entry).map_err(refused)?;
        Ok(PluginInstallResponse {
            auth_policy: wire_name(record.auth_policy),
            apps_needing_auth: Vec::new(),
        })
    })
    .await
}

/// `plugin/uninstall`: `PLUGIN@MARKETPLACE`; a bare id would be a remote plugin's.
pub(crate) async fn plugin_uninstall(
    home: PathBuf,
    params: PluginUninstallParams,
) -> Result<EmptyResponse> {
    if !params.plugin_id.contains('@') {
        return Err(AppServerError::InvalidRequest(format!(
            "resolve remote plugin before uninstall: {NEEDS_ACCOUNT}"
        )));
    }
    let id = PluginId::parse(&params.plugin_id, None).map_err(|_| {
        AppServerError::InvalidRequest(format!(
            "invalid plugin id `{}`: expected PLUGIN@MARKETPLACE",
            params.plugin_id
        ))
    })?;
    blocking(move || {
        uninstall_plugin(&home, &id).map_err(refused)?;
        Ok(EmptyResponse {})
    })
    .await
}

/// `plugin/skill/read`: remote plugins only.
pub(crate) fn plugin_skill_read(_params: PluginSkillReadParams) -> Result<EmptyResponse> {
    Err(AppServerError::InvalidRequest(format!(
        "read remote plugin skill details: {NEEDS_ACCOUNT}"
    )))
}

/// `plugin/reconcile`: nothing remote to bring in line.
pub(crate) fn plugin_reconcile() -> PluginReconcileResponse {
    PluginReconcileResponse::default()
}

/// `marketplace/add`.
pub(crate) async fn marketplace_add(
    home: PathBuf,
    params: MarketplaceAddParams,
) -> Result<MarketplaceAddResponse> {
    blocking(move || {
        let sparse = params.sparse_paths.unwrap_or_default();
        let added = add_marketplace(&home, &params.source, params.ref_name.as_deref(), &sparse)
            .map_err(refused)?;
        Ok(MarketplaceAddResponse {
            marketplace_name: added.name,
            installed_root: added.installed_root,
            already_added: added.already_added,
        })
    })
    .await
}

/// `marketplace/remove`.
pub(crate) async fn marketplace_remove(
    home: PathBuf,
    params: MarketplaceRemoveParams,
) -> Result<MarketplaceRemoveResponse> {
    blocking(move || {
        let removed = remove_marketplace(&home, &params.marketplace_name).map_err(refused)?;
        Ok(MarketplaceRemoveResponse {
            marketplace_name: removed.name,
            installed_root: removed.removed_clone,
        })
    })
    .await
}

/// `marketplace/upgrade`.
pub(crate) async fn marketplace_upgrade(
    home: PathBuf,
    params: MarketplaceUpgradeParams,
) -> Result<MarketplaceUpgradeResponse> {
    blocking(move || {
        let upgraded =
            upgrade_marketplaces(&home, params.marketplace_name.as_deref()).map_err(refused)?;
        Ok(MarketplaceUpgradeResponse {
            selected_marketplaces: upgraded.selected,
            upgraded_roots: upgraded.upgraded_roots,
            errors: upgraded
                .errors
                .into_iter()
                .map(|(marketplace_name, message)| MarketplaceUpgradeErrorInfo {
                    marketplace_name,
                    message,
                })
                .collect(),
        })
    })
    .await
}

fn skills_changed() -> keel_protocol::app_server::ServerNotification {
    keel_protocol::app_server::ServerNotification::SkillsChanged(
        keel_protocol::app_server::SkillsChangedNotification {},
    )
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(PluginList, |ctx, p| Reply::now(
    &plugin_list(ctx.state.keel_home().to_path_buf(), p).await?
));
handle!(PluginInstalled, |ctx, p| Reply::now(
    &plugin_installed(ctx.state.keel_home().to_path_buf(), p).await?
));
handle!(PluginRead, |ctx, p| Reply::now(
    &plugin_read(ctx.state.keel_home().to_path_buf(), p).await?
));
// An installed or removed plugin brings or takes skills: clients list them again.
handle!(PluginInstall, |ctx, p| Reply::then_notify(
    &plugin_install(ctx.state.keel_home().to_path_buf(), p).await?,
    ctx.outgoing(),
    skills_changed(),
));
handle!(PluginUninstall, |ctx, p| Reply::then_notify(
    &plugin_uninstall(ctx.state.keel_home().to_path_buf(), p).await?,
    ctx.outgoing(),
    skills_changed(),
));
handle!(PluginSkillRead, |_, p| Reply::now(&plugin_skill_read(p)?));
handle!(PluginReconcile, |_, _| Reply::now(&plugin_reconcile()));
handle!(MarketplaceAdd, |ctx, p| Reply::now(
    &marketplace_add(ctx.state.keel_home().to_path_buf(), p).await?
));
handle!(MarketplaceRemove, |ctx, p| Reply::now(
    &marketplace_remove(ctx.state.keel_home().to_path_buf(), p).await?
));
handle!(MarketplaceUpgrade, |ctx, p| Reply::now(
    &marketplace_upgrade(ctx.state.keel_home().to_path_buf(), p).await?
));
