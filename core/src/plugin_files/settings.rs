//! The plugin keys of `config.toml`, in Codex's shape, as read: `[marketplaces.NAME]`
//! (`source_type = "local" | "git"`, `source`, and for git `ref` and `sparse_paths`) and
//! `[plugins."PLUGIN@MARKETPLACE"]` (`enabled`). The plugins module writes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{PluginError, USER_CONFIG_FILE};

/// How a marketplace was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarketplaceSourceType {
    /// A directory, used where it is.
    Local,
    /// A git repository, cloned under `KEEL_HOME/.tmp/marketplaces`.
    Git,
}

impl MarketplaceSourceType {
    /// As written in `config.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Git => "git",
        }
    }
}

/// One `[marketplaces.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceSetting {
    /// The table's name (the marketplace's name when it was added).
    pub name: String,
    /// Directory or git.
    pub source_type: MarketplaceSourceType,
    /// The directory, or the git URL.
    pub source: String,
    /// The git ref to check out.
    pub ref_name: Option<String>,
    /// Paths of a sparse git checkout.
    pub sparse_paths: Vec<String>,
}

impl MarketplaceSetting {
    /// The directory holding the marketplace's files.
    pub fn root(&self, keel_home: &Path) -> PathBuf {
        match self.source_type {
            MarketplaceSourceType::Local => PathBuf::from(&self.source),
            MarketplaceSourceType::Git => super::marketplace_clone_dir(keel_home).join(&self.name),
        }
    }
}

/// Every plugin key of the user's `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginSettings {
    /// Added marketplaces, by name.
    pub marketplaces: BTreeMap<String, MarketplaceSetting>,
    /// Installed plugins, by `PLUGIN@MARKETPLACE`, with whether each is enabled.
    pub plugins: BTreeMap<String, bool>,
}

/// Reads the plugin keys of `KEEL_HOME/config.toml` (a missing file has none).
pub fn read_plugin_settings(keel_home: &Path) -> Result<PluginSettings, PluginError> {
    let path = keel_home.join(USER_CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(PluginError::io(&path, err)),
    };
    Ok(parse_plugin_settings(&text))
}

/// The plugin keys of a config file's text; tables of the wrong shape are skipped (the
/// config loader reports them).
pub fn parse_plugin_settings(text: &str) -> PluginSettings {
    let Ok(table) = text.parse::<toml::Table>() else {
        return PluginSettings::default();
    };
    let mut settings = PluginSettings::default();
    if let Some(toml::Value::Table(marketplaces)) = table.get("marketplaces") {
        for (name, value) in marketplaces {
            let Some(entry) = value.as_table() else {
                continue;
            };
            let text_of = |key: &str| {
                entry
                    .get(key)
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned)
            };
            // A table without `source_type` is a git marketplace's clone (Codex's reading).
            let source_type = match text_of("source_type").as_deref() {
                Some("local") => MarketplaceSourceType::Local,
                _ => MarketplaceSourceType::Git,
            };
            settings.marketplaces.insert(
                name.clone(),
                MarketplaceSetting {
                    name: name.clone(),
                    source_type,
                    source: text_of("source").unwrap_or_default(),
                    ref_name: text_of("ref"),
                    sparse_paths: entry
                        .get("sparse_paths")
                        .and_then(toml::Value::as_array)
                        .map(|paths| {
                            paths
                                .iter()
                                .filter_map(|path| path.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                },
            );
        }
    }
    if let Some(toml::Value::Table(plugins)) = table.get("plugins") {
        for (id, value) in plugins {
            let enabled = value
                .get("enabled")
                .and_then(toml::Value::as_bool)
                .unwrap_or(true);
            settings.plugins.insert(id.clone(), enabled);
        }
    }
    settings
}
