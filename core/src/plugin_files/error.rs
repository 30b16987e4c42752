//! Why a plugin or marketplace operation failed; every message names the file, field, plugin
//! or marketplace involved, in Codex's words where Codex has them.

use std::path::PathBuf;

/// A failed plugin or marketplace operation.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A plugin was named without its marketplace.
    #[error("plugin requires --marketplace unless passed as <plugin>@<marketplace>")]
    NoMarketplace,
    /// `PLUGIN@A` with `--marketplace B`.
    #[error("plugin id `{id}` belongs to marketplace `{}`, but --marketplace specified `{flag}`", id.split_once('@').map_or("", |(_, m)| m))]
    MarketplaceMismatch {
        /// The id as given.
        id: String,
        /// The flag's marketplace.
        flag: String,
    },
    /// The marketplace does not list the plugin (or is not added).
    #[error("plugin `{plugin}` was not found in marketplace `{marketplace}`")]
    PluginNotFound {
        /// The plugin's name.
        plugin: String,
        /// The marketplace's name.
        marketplace: String,
    },
    /// The marketplace's policy forbids installing the plugin.
    #[error("plugin `{plugin}` is not available for install in marketplace `{marketplace}`")]
    NotAvailable {
        /// The plugin's name.
        plugin: String,
        /// The marketplace's name.
        marketplace: String,
    },
    /// No marketplace of that name is configured.
    #[error("marketplace `{0}` is not configured or installed")]
    UnknownMarketplace(String),
    /// `marketplace upgrade` of a marketplace that is not a git clone.
    #[error("marketplace `{0}` is not configured as a Git marketplace")]
    NotGit(String),
    /// A marketplace manifest (or the directory that should hold one) is wrong.
    #[error("invalid marketplace file `{}`: {message}", path.display())]
    InvalidMarketplace {
        /// The manifest, or the directory without one.
        path: PathBuf,
        /// What is wrong, with the field where one is to blame.
        message: String,
    },
    /// A plugin's manifest is wrong.
    #[error("invalid plugin manifest `{}`: {message}", path.display())]
    InvalidPlugin {
        /// The manifest, or the plugin directory without one.
        path: PathBuf,
        /// What is wrong, with the field where one is to blame.
        message: String,
    },
    /// A marketplace source that is neither a directory nor a git location.
    #[error(
        "invalid marketplace source format; expected owner/repo, a git URL, or a local marketplace path"
    )]
    BadSource,
    /// `--ref` or `--sparse` with a local directory.
    #[error("--{0} is only supported for git marketplace sources")]
    GitOnlyOption(&'static str),
    /// A name already taken by a marketplace from elsewhere.
    #[error(
        "marketplace '{name}' is already added from a different source; remove it before adding this source"
    )]
    NameTaken {
        /// The marketplace's name.
        name: String,
    },
    /// A plugin whose source Keel does not install from.
    #[error(
        "plugin `{plugin}` comes from a {kind} source; Keel installs plugins from directories inside an added marketplace only"
    )]
    UnsupportedSource {
        /// The plugin's name.
        plugin: String,
        /// The source's kind (`url`, `git-subdir`, `npm`, …).
        kind: String,
    },
    /// A git command failed.
    #[error("{0}")]
    Git(String),
    /// Reading or writing files failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `config.toml` could not be updated (the config writer's reason).
    #[error("cannot update config.toml: {0}")]
    Config(String),
}

impl PluginError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
