//! Plugins and marketplaces, as Codex 0.171 and Claude Code lay them out: a marketplace is a
//! directory (or a git repository) whose manifest lists plugins; a plugin is a directory
//! bundling skills, MCP servers and hooks. Adding a marketplace records it in `config.toml`
//! (`[marketplaces.NAME]`); installing a plugin copies it to
//! `KEEL_HOME/plugins/cache/MARKETPLACE/PLUGIN/VERSION` and records `[plugins."PLUGIN@MARKETPLACE"]`.
//! An installed, enabled plugin's skills, MCP servers and hooks then count as if configured
//! by hand (hooks under the same trust rules as a project's).
//!
//! Nothing is fetched from anywhere the user did not add: a git marketplace is cloned when it
//! is added or upgraded, never behind the user's back, and plugin sources other than
//! directories inside an added marketplace are refused with the reason.

mod catalog;
mod contents;
mod error;
mod git;
mod install;
mod manifest;
mod marketplace;
mod settings;

pub use catalog::{
    MarketplaceListing, PluginCatalog, PluginListing, PluginStatus, load_catalog,
    marketplace_file_in,
};
pub use contents::{InstalledPlugin, PluginHooksSpec, installed_plugins};
pub use error::PluginError;
pub use install::{
    AddedMarketplace, InstalledPluginRecord, RemovedMarketplace, UpgradedMarketplaces,
    add_marketplace, install_entry, install_plugin, remove_marketplace, uninstall_plugin,
    upgrade_marketplaces,
};
pub use manifest::{McpServersSpec, PluginInterfaceManifest, PluginManifest, read_plugin_manifest};
pub use marketplace::{
    AuthPolicy, InstallPolicy, Marketplace, MarketplaceEntry, PluginSource, read_marketplace,
    read_marketplace_file,
};
pub use settings::{
    MarketplaceSetting, MarketplaceSourceType, PluginSettings, read_plugin_settings,
};

/// `PLUGIN@MARKETPLACE`: how a plugin is named in `config.toml`, the CLI and the app-server.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PluginId {
    /// The plugin's name in its marketplace.
    pub plugin: String,
    /// The marketplace's name.
    pub marketplace: String,
}

impl PluginId {
    /// Reads `PLUGIN@MARKETPLACE`, or `PLUGIN` with `marketplace` given separately (both
    /// may be given when they agree).
    pub fn parse(selector: &str, marketplace: Option<&str>) -> Result<Self, PluginError> {
        let (plugin, named) = match selector.split_once('@') {
            Some((plugin, named)) => (plugin, Some(named)),
            None => (selector, None),
        };
        let marketplace = match (named, marketplace) {
            (Some(named), Some(flag)) if named != flag => {
                return Err(PluginError::MarketplaceMismatch {
                    id: selector.to_string(),
                    flag: flag.to_string(),
                });
            }
            (Some(named), _) => named,
            (None, Some(flag)) => flag,
            (None, None) => return Err(PluginError::NoMarketplace),
        };
        if !valid_plugin_name(plugin) || !valid_marketplace_name(marketplace) {
            return Err(PluginError::NoMarketplace);
        }
        Ok(Self {
            plugin: plugin.to_string(),
            marketplace: marketplace.to_string(),
        })
    }
}

impl std::fmt::Display for PluginId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.plugin, self.marketplace)
    }
}

/// Marketplace names: ASCII letters, digits, `_` and `-`.
pub(crate) fn valid_marketplace_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Plugin names: ASCII letters, digits, `.`, `_` and `-`.
pub(crate) fn valid_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Where installed plugins are copied: `KEEL_HOME/plugins/cache`.
pub fn plugin_cache_dir(keel_home: &std::path::Path) -> std::path::PathBuf {
    keel_home.join("plugins").join("cache")
}

/// Where git marketplaces are cloned: `KEEL_HOME/.tmp/marketplaces`.
pub fn marketplace_clone_dir(keel_home: &std::path::Path) -> std::path::PathBuf {
    keel_home.join(".tmp").join("marketplaces")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_id_needs_its_marketplace_and_agrees_with_the_flag() {
        let id = PluginId::parse("alpha@mk1", None).unwrap();
        assert_eq!(id.to_string(), "alpha@mk1");
        assert_eq!(PluginId::parse("alpha", Some("mk1")).unwrap(), id);
        assert_eq!(PluginId::parse("alpha@mk1", Some("mk1")).unwrap(), id);
        for bad in ["alpha", "alpha@", "@mk1", "a@b@c", "al pha@mk1"] {
            assert!(matches!(
                PluginId::parse(bad, None),
                Err(PluginError::NoMarketplace)
            ));
        }
        assert!(matches!(
            PluginId::parse("alpha@mk1", Some("other")),
            Err(PluginError::MarketplaceMismatch { .. })
        ));
    }
}
