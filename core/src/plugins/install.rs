//! Adding, upgrading and removing marketplaces; installing and uninstalling plugins. An
//! install copies the plugin's directory to `KEEL_HOME/plugins/cache/MARKETPLACE/PLUGIN/VERSION`
//! (through a staging copy renamed into place, so a failed copy leaves nothing half-made) and
//! records it in `config.toml`; an uninstall removes both. Operations are synchronous (files
//! and `git`); async callers run them on a blocking thread.

use std::path::{Path, PathBuf};

use super::catalog::load_catalog;
use super::config_edits::{forget_marketplace, forget_plugin, save_marketplace, save_plugin};
use super::git::{clone_into_staging, git_source, update};
use super::marketplace::read_marketplace;
use super::{
    AuthPolicy, InstallPolicy, PluginError, PluginId, PluginSource, marketplace_clone_dir,
    plugin_cache_dir, read_plugin_manifest,
};
use super::{MarketplaceSetting, MarketplaceSourceType, read_plugin_settings};
use crate::plugin_files::installed_copy;

/// What adding a marketplace did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedMarketplace {
    /// Its name, from its manifest.
    pub name: String,
    /// Where its files are (the directory, or the clone).
    pub installed_root: PathBuf,
    /// The source as recorded (an absolute directory, or the git URL).
    pub source: String,
    /// It was already added from the same source.
    pub already_added: bool,
}

/// What removing a marketplace did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedMarketplace {
    /// Its name.
    pub name: String,
    /// The clone deleted, for a git marketplace.
    pub removed_clone: Option<PathBuf>,
}

/// What an upgrade did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpgradedMarketplaces {
    /// The git marketplaces looked at.
    pub selected: Vec<String>,
    /// The clones that moved to a new commit.
    pub upgraded_roots: Vec<PathBuf>,
    /// `(marketplace, reason)` for each that failed.
    pub errors: Vec<(String, String)>,
}

/// What installing a plugin did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledPluginRecord {
    /// `PLUGIN@MARKETPLACE`.
    pub id: PluginId,
    /// The version installed (`local` without one).
    pub version: String,
    /// The installed copy.
    pub installed_path: PathBuf,
    /// The marketplace's sign-in policy for it.
    pub auth_policy: AuthPolicy,
}

fn is_local_source(source: &str) -> bool {
    source.starts_with('/')
        || source.starts_with("./")
        || source.starts_with("../")
        || source == "."
        || source == ".."
        || Path::new(source).is_dir()
}

/// Adds the marketplace at `source`: a local directory (used where it is) or a git location
/// (cloned, at `ref_name`, sparsely when `sparse_paths` names paths).
pub fn add_marketplace(
    keel_home: &Path,
    source: &str,
    ref_name: Option<&str>,
    sparse_paths: &[String],
) -> Result<AddedMarketplace, PluginError> {
    let settings = read_plugin_settings(keel_home)?;
    if is_local_source(source) {
        if ref_name.is_some() {
            return Err(PluginError::GitOnlyOption("ref"));
        }
        if !sparse_paths.is_empty() {
            return Err(PluginError::GitOnlyOption("sparse"));
        }
        let root = std::fs::canonicalize(source).map_err(|err| PluginError::io(source, err))?;
        if !root.is_dir() {
            return Err(PluginError::InvalidMarketplace {
                path: root,
                message: "a local marketplace source must be a directory, not a file".into(),
            });
        }
        let marketplace = read_marketplace(&root)?;
        let recorded = root.display().to_string();
        let already_added = match settings.marketplaces.get(&marketplace.name) {
            Some(existing)
                if existing.source_type == MarketplaceSourceType::Local
                    && existing.source == recorded =>
            {
                true
            }
            Some(_) => {
                return Err(PluginError::NameTaken {
                    name: marketplace.name,
                });
            }
            None => false,
        };
        if !already_added {
            save_marketplace(
                keel_home,
                &MarketplaceSetting {
                    name: marketplace.name.clone(),
                    source_type: MarketplaceSourceType::Local,
                    source: recorded.clone(),
                    ref_name: None,
                    sparse_paths: Vec::new(),
                },
            )?;
        }
        return Ok(AddedMarketplace {
            name: marketplace.name,
            installed_root: root,
            source: recorded,
            already_added,
        });
    }
    let Some(mut git) = git_source(source) else {
        return Err(PluginError::BadSource);
    };
    if let Some(reference) = ref_name {
        git.ref_name = Some(reference.to_string());
    }
    let clones = marketplace_clone_dir(keel_home);
    let staging = clone_into_staging(&git, sparse_paths, &clones.join(".staging"))?;
    let cleanup = |staging: &Path| {
        if let Some(parent) = staging.parent() {
            let _ = std::fs::remove_dir_all(parent);
        }
    };
    let marketplace = match read_marketplace(&staging) {
        Ok(marketplace) => marketplace,
        Err(err) => {
            cleanup(&staging);
            return Err(err);
        }
    };
    let name = marketplace.name;
    let destination = clones.join(&name);
    if let Some(existing) = settings.marketplaces.get(&name) {
        cleanup(&staging);
        if existing.source_type == MarketplaceSourceType::Git
            && existing.source == git.url
            && existing.ref_name == git.ref_name
        {
            return Ok(AddedMarketplace {
                name,
                installed_root: destination,
                source: git.url,
                already_added: true,
            });
        }
        return Err(PluginError::NameTaken { name });
    }
    if destination.exists() {
        std::fs::remove_dir_all(&destination).map_err(|err| PluginError::io(&destination, err))?;
    }
    std::fs::rename(&staging, &destination).map_err(|err| PluginError::io(&destination, err))?;
    cleanup(&staging);
    save_marketplace(
        keel_home,
        &MarketplaceSetting {
            name: name.clone(),
            source_type: MarketplaceSourceType::Git,
            source: git.url.clone(),
            ref_name: git.ref_name.clone(),
            sparse_paths: sparse_paths.to_vec(),
        },
    )?;
    Ok(AddedMarketplace {
        name,
        installed_root: destination,
        source: git.url,
        already_added: false,
    })
}

/// Removes marketplace `name` (and its clone). Plugins installed from it stay installed, as
/// in Codex: `keel plugin remove` takes them away.
pub fn remove_marketplace(keel_home: &Path, name: &str) -> Result<RemovedMarketplace, PluginError> {
    let settings = read_plugin_settings(keel_home)?;
    let Some(setting) = settings.marketplaces.get(name) else {
        return Err(PluginError::UnknownMarketplace(name.to_string()));
    };
    forget_marketplace(keel_home, name)?;
    let removed_clone = match setting.source_type {
        MarketplaceSourceType::Local => None,
        MarketplaceSourceType::Git => {
            let root = setting.root(keel_home);
            if root.exists() {
                std::fs::remove_dir_all(&root).map_err(|err| PluginError::io(&root, err))?;
            }
            Some(root)
        }
    };
    Ok(RemovedMarketplace {
        name: name.to_string(),
        removed_clone,
    })
}

/// Fetches the git marketplace `name` (every git marketplace when `None`) and refreshes the
/// plugins installed from it.
pub fn upgrade_marketplaces(
    keel_home: &Path,
    name: Option<&str>,
) -> Result<UpgradedMarketplaces, PluginError> {
    let settings = read_plugin_settings(keel_home)?;
    let selected: Vec<&MarketplaceSetting> = match name {
        Some(name) => match settings.marketplaces.get(name) {
            Some(setting) if setting.source_type == MarketplaceSourceType::Git => vec![setting],
            _ => return Err(PluginError::NotGit(name.to_string())),
        },
        None => settings
            .marketplaces
            .values()
            .filter(|setting| setting.source_type == MarketplaceSourceType::Git)
            .collect(),
    };
    let mut result = UpgradedMarketplaces {
        selected: selected
            .iter()
            .map(|setting| setting.name.clone())
            .collect(),
        ..UpgradedMarketplaces::default()
    };
    for setting in selected {
        let root = setting.root(keel_home);
        match update(&root, setting.ref_name.as_deref()) {
            Ok((before, after)) => {
                if before != after {
                    result.upgraded_roots.push(root);
                    refresh_installed(keel_home, &setting.name, &mut result.errors);
                }
            }
            Err(err) => result.errors.push((setting.name.clone(), err.to_string())),
        }
    }
    Ok(result)
}

/// Installs again every plugin installed from marketplace `name`, so they follow it.
fn refresh_installed(keel_home: &Path, name: &str, errors: &mut Vec<(String, String)>) {
    let Ok(settings) = read_plugin_settings(keel_home) else {
        return;
    };
    for id in settings.plugins.keys() {
        let Ok(id) = PluginId::parse(id, None) else {
            continue;
        };
        if id.marketplace == name
            && let Err(err) = install_plugin(keel_home, &id, &[])
        {
            errors.push((name.to_string(), format!("{id}: {err}")));
        }
    }
}

/// Installs plugin `id` from its marketplace (an added one, or one of `cwds`' repositories).
pub fn install_plugin(
    keel_home: &Path,
    id: &PluginId,
    cwds: &[PathBuf],
) -> Result<InstalledPluginRecord, PluginError> {
    let catalog = load_catalog(keel_home, cwds)?;
    let not_found = || PluginError::PluginNotFound {
        plugin: id.plugin.clone(),
        marketplace: id.marketplace.clone(),
    };
    let listing = catalog.plugin(id).ok_or_else(not_found)?;
    install_entry(keel_home, id, &listing.entry)
}

/// Installs the marketplace entry `entry` as plugin `id` (a marketplace read from anywhere,
/// such as a repository's own).
pub fn install_entry(
    keel_home: &Path,
    id: &PluginId,
    entry: &super::MarketplaceEntry,
) -> Result<InstalledPluginRecord, PluginError> {
    if entry.install_policy == InstallPolicy::NotAvailable {
        return Err(PluginError::NotAvailable {
            plugin: id.plugin.clone(),
            marketplace: id.marketplace.clone(),
        });
    }
    let source = match &entry.source {
        PluginSource::Local(dir) => dir,
        PluginSource::Remote { kind, .. } => {
            return Err(PluginError::UnsupportedSource {
                plugin: id.plugin.clone(),
                kind: kind.clone(),
            });
        }
    };
    let manifest = read_plugin_manifest(source, &id.plugin)?;
    let version = manifest
        .version
        .clone()
        .unwrap_or_else(|| "local".to_string());
    let plugin_dir = plugin_cache_dir(keel_home)
        .join(&id.marketplace)
        .join(&id.plugin);
    std::fs::create_dir_all(&plugin_dir).map_err(|err| PluginError::io(&plugin_dir, err))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&plugin_dir)
        .map_err(|err| PluginError::io(&plugin_dir, err))?;
    let copy = staging.path().join("copy");
    copy_tree(source, &copy)?;
    // The old versions go once the new one is in place.
    let destination = plugin_dir.join(&version);
    if destination.exists() {
        std::fs::remove_dir_all(&destination).map_err(|err| PluginError::io(&destination, err))?;
    }
    std::fs::rename(&copy, &destination).map_err(|err| PluginError::io(&destination, err))?;
    drop(staging);
    if let Ok(entries) = std::fs::read_dir(&plugin_dir) {
        for old in entries.flatten() {
            if old.file_name() != version.as_str() && old.path().is_dir() {
                let _ = std::fs::remove_dir_all(old.path());
            }
        }
    }
    save_plugin(keel_home, id)?;
    Ok(InstalledPluginRecord {
        id: id.clone(),
        version,
        installed_path: destination,
        auth_policy: entry.auth_policy,
    })
}

/// Uninstalls plugin `id`: its `config.toml` entry and its copy. Nothing installed is not
/// an error (Codex's behaviour); `true` when something was removed.
pub fn uninstall_plugin(keel_home: &Path, id: &PluginId) -> Result<bool, PluginError> {
    let settings = read_plugin_settings(keel_home)?;
    let mut removed = false;
    if settings.plugins.contains_key(&id.to_string()) {
        forget_plugin(keel_home, id)?;
        removed = true;
    }
    let dir = plugin_cache_dir(keel_home)
        .join(&id.marketplace)
        .join(&id.plugin);
    if installed_copy(keel_home, id).is_some() || dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|err| PluginError::io(&dir, err))?;
        removed = true;
    }
    Ok(removed)
}

/// Copies the directory `from` to `to` (new), files and links as they are; `.git` is left
/// out. A link is copied as a link, never followed, so a plugin cannot pull files from
/// outside itself into the copy.
fn copy_tree(from: &Path, to: &Path) -> Result<(), PluginError> {
    std::fs::create_dir_all(to).map_err(|err| PluginError::io(to, err))?;
    let entries = std::fs::read_dir(from).map_err(|err| PluginError::io(from, err))?;
    for entry in entries {
        let entry = entry.map_err(|err| PluginError::io(from, err))?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let source = entry.path();
        let target = to.join(&name);
        let kind = entry
            .file_type()
            .map_err(|err| PluginError::io(&source, err))?;
        if kind.is_symlink() {
            let link = std::fs::read_link(&source).map_err(|err| PluginError::io(&source, err))?;
            std::os::unix::fs::symlink(&link, &target)
                .map_err(|err| PluginError::io(&target, err))?;
        } else if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            std::fs::copy(&source, &target).map_err(|err| PluginError::io(&source, err))?;
        }
    }
    Ok(())
}
