//! The files of plugins, read: `PLUGIN@MARKETPLACE` ids, plugin manifests, the plugin keys
//! of `config.toml`, and which plugins are installed with what they bring (skills, MCP
//! server definitions, hooks). It depends on nothing else in the engine, so the config
//! loader, skills and hooks can read installed plugins while the plugins module (which writes
//! `config.toml`) sits above them all.

mod error;
mod installed;
mod manifest;
mod settings;

pub use error::PluginError;
pub use installed::{InstalledPlugin, installed_copy, installed_plugins, installed_plugins_in};
pub use manifest::{
    McpServersSpec, PluginHooksSpec, PluginInterfaceManifest, PluginManifest, read_plugin_manifest,
};
pub use settings::{
    MarketplaceSetting, MarketplaceSourceType, PluginSettings, parse_plugin_settings,
    read_plugin_settings,
};

/// A deserialisation error as `FIELD.PATH: reason` (just the reason at the top level), so a
/// message names the field at fault.
pub(crate) fn field_error<E: std::fmt::Display>(err: &serde_path_to_error::Error<E>) -> String {
    let at = err.path().to_string();
    if at == "." {
        err.inner().to_string()
    } else {
        format!("{at}: {}", err.inner())
    }
}

/// The user's config file in the Keel home (the config module's `CONFIG_FILE_NAME`).
pub(crate) const USER_CONFIG_FILE: &str = "config.toml";

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
