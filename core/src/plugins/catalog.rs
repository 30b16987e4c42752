//! What the user can see of plugins: every added marketplace (and, for the app-server, the
//! marketplaces of the asked directories' repositories) with its plugins, each marked
//! installed and enabled or not. A marketplace that fails to load is reported with the
//! reason, never fatal to the rest.

use std::path::{Path, PathBuf};

use super::marketplace::{manifest_in, read_manifest};
use super::{
    Marketplace, MarketplaceEntry, MarketplaceSetting, PluginError, PluginId, read_plugin_settings,
};
use crate::plugin_files::installed_copy;

/// Whether a listed plugin is installed, and enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginStatus {
    /// Not installed.
    Available,
    /// Installed and in use.
    Enabled,
    /// Installed, turned off in `config.toml`.
    Disabled,
}

/// One listed plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginListing {
    /// `PLUGIN@MARKETPLACE`.
    pub id: PluginId,
    /// The marketplace's entry.
    pub entry: MarketplaceEntry,
    /// Installed or not.
    pub status: PluginStatus,
    /// The installed copy's directory.
    pub installed_path: Option<PathBuf>,
    /// The installed copy's version (`local` without one).
    pub installed_version: Option<String>,
}

/// One marketplace with its plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceListing {
    /// The marketplace as read.
    pub marketplace: Marketplace,
    /// How it was added; `None` for a repository's own marketplace.
    pub setting: Option<MarketplaceSetting>,
    /// Its plugins.
    pub plugins: Vec<PluginListing>,
}

/// Every marketplace in view, and those that failed to load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginCatalog {
    /// Loaded marketplaces, added ones first (by name), then repositories' own.
    pub marketplaces: Vec<MarketplaceListing>,
    /// `(manifest or root, reason)` for each that failed.
    pub load_errors: Vec<(PathBuf, String)>,
}

impl PluginCatalog {
    /// The marketplace named `name`.
    pub fn marketplace(&self, name: &str) -> Option<&MarketplaceListing> {
        self.marketplaces
            .iter()
            .find(|listing| listing.marketplace.name == name)
    }

    /// The listed plugin `id`.
    pub fn plugin(&self, id: &PluginId) -> Option<&PluginListing> {
        self.marketplace(&id.marketplace)
            .and_then(|listing| listing.plugins.iter().find(|plugin| plugin.id == *id))
    }
}

/// The marketplace manifest of the repository holding `dir` (or of `dir` itself outside a
/// repository), if it has one.
pub fn marketplace_file_in(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let root = crate::repo_root::repo_root(dir).unwrap_or(dir);
    manifest_in(root).map(|manifest| (root.to_path_buf(), manifest))
}

/// Loads every added marketplace, plus the repositories' own marketplaces of `cwds`.
pub fn load_catalog(keel_home: &Path, cwds: &[PathBuf]) -> Result<PluginCatalog, PluginError> {
    let settings = read_plugin_settings(keel_home)?;
    let mut catalog = PluginCatalog::default();
    let mut found: Vec<(Marketplace, Option<MarketplaceSetting>)> = Vec::new();
    for setting in settings.marketplaces.values() {
        let root = setting.root(keel_home);
        match manifest_in(&root)
            .ok_or_else(|| PluginError::InvalidMarketplace {
                path: root.clone(),
                message: "marketplace root does not contain a supported manifest".into(),
            })
            .and_then(|manifest| read_manifest(&root, &manifest))
        {
            Ok(marketplace) => found.push((marketplace, Some(setting.clone()))),
            Err(err) => catalog
                .load_errors
                .push((manifest_in(&root).unwrap_or(root), err.to_string())),
        }
    }
    for cwd in cwds {
        let Some((root, manifest)) = marketplace_file_in(cwd) else {
            continue;
        };
        if found.iter().any(|(seen, _)| seen.manifest_path == manifest) {
            continue;
        }
        match read_manifest(&root, &manifest) {
            Ok(marketplace) => found.push((marketplace, None)),
            Err(err) => catalog.load_errors.push((manifest, err.to_string())),
        }
    }
    for (marketplace, setting) in found {
        let plugins = marketplace
            .plugins
            .iter()
            .map(|entry| {
                let id = PluginId {
                    plugin: entry.name.clone(),
                    marketplace: marketplace.name.clone(),
                };
                let enabled = settings.plugins.get(&id.to_string()).copied();
                let copy = installed_copy(keel_home, &id);
                let status = match (enabled, &copy) {
                    (Some(true), Some(_)) => PluginStatus::Enabled,
                    (Some(false), Some(_)) => PluginStatus::Disabled,
                    _ => PluginStatus::Available,
                };
                let (installed_path, installed_version) = match copy {
                    Some((path, version)) if status != PluginStatus::Available => {
                        (Some(path), Some(version))
                    }
                    _ => (None, None),
                };
                PluginListing {
                    id,
                    entry: entry.clone(),
                    status,
                    installed_path,
                    installed_version,
                }
            })
            .collect();
        catalog.marketplaces.push(MarketplaceListing {
            marketplace,
            setting,
            plugins,
        });
    }
    Ok(catalog)
}
