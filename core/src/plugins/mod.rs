//! Plugins and marketplaces, as Codex 0.171 and Claude Code lay them out: a marketplace is a
//! directory (or a git repository) whose manifest lists plugins; a plugin is a directory
//! bundling skills, MCP servers and hooks. Adding a marketplace records it in `config.toml`
//! (`[marketplaces.NAME]`); installing a plugin copies it to
//! `KEEL_HOME/plugins/cache/MARKETPLACE/PLUGIN/VERSION` and records `[plugins."PLUGIN@MARKETPLACE"]`.
//! An installed, enabled plugin's skills, MCP servers and hooks then count as if configured
//! by hand (hooks under the same trust rules as a project's); reading them is
//! `plugin_files`, which everything below this module can use.
//!
//! Nothing is fetched from anywhere the user did not add: a git marketplace is cloned when it
//! is added or upgraded, never behind the user's back, and plugin sources other than
//! directories inside an added marketplace are refused with the reason.

mod catalog;
mod config_edits;
mod git;
mod install;
mod marketplace;

pub use crate::plugin_files::{
    InstalledPlugin, MarketplaceSetting, MarketplaceSourceType, McpServersSpec, PluginError,
    PluginHooksSpec, PluginId, PluginInterfaceManifest, PluginManifest, PluginSettings,
    installed_plugins, marketplace_clone_dir, plugin_cache_dir, read_plugin_manifest,
    read_plugin_settings,
};
pub use catalog::{
    MarketplaceListing, PluginCatalog, PluginListing, PluginStatus, load_catalog,
    marketplace_file_in,
};
pub use install::{
    AddedMarketplace, InstalledPluginRecord, RemovedMarketplace, UpgradedMarketplaces,
    add_marketplace, install_entry, install_plugin, remove_marketplace, uninstall_plugin,
    upgrade_marketplaces,
};
pub use marketplace::{
    AuthPolicy, InstallPolicy, Marketplace, MarketplaceEntry, PluginSource, read_marketplace,
    read_marketplace_file,
};
