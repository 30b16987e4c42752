//! A marketplace's manifest: its name and the plugins it lists. Found at the marketplace
//! root as `.agents/plugins/marketplace.json`, else `.claude-plugin/marketplace.json`, else
//! `.cursor-plugin/marketplace.json` (Codex's order). Unknown fields are ignored, so Claude
//! Code's marketplaces (`owner`, `metadata`, …) load unchanged.
//!
//! Beyond Codex, an entry that cannot be used (a bad name, a path outside the marketplace, a
//! source kind nobody understands) is reported with the field at fault instead of vanishing.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::PluginError;
use crate::plugin_files::{valid_marketplace_name, valid_plugin_name};

/// Where a marketplace's manifest may be, in order of precedence.
pub(crate) const MARKETPLACE_MANIFESTS: [&str; 3] = [
    ".agents/plugins/marketplace.json",
    ".claude-plugin/marketplace.json",
    ".cursor-plugin/marketplace.json",
];

/// Whether a plugin may be installed, as the marketplace says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InstallPolicy {
    /// Listed but not installable.
    NotAvailable,
    /// Installable on request (the default).
    #[default]
    Available,
    /// Meant to be installed for everyone.
    InstalledByDefault,
}

/// When a plugin's apps ask the user to sign in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthPolicy {
    /// At install (the default).
    #[default]
    OnInstall,
    /// At first use.
    OnUse,
}

/// Where a listed plugin's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginSource {
    /// A directory inside the marketplace (`"./plugins/x"` or `{"source": "local", …}`).
    Local(PathBuf),
    /// Anything else (`url`, `git-subdir`, `npm`): listed, not installed by Keel.
    Remote {
        /// The source's kind.
        kind: String,
        /// How it is shown (the URL or package).
        shown: String,
        /// The source object as written (`url`, `path`, `ref`, `sha`, `package`, …).
        details: serde_json::Map<String, Value>,
    },
}

/// One plugin a marketplace lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketplaceEntry {
    /// Its name (the `PLUGIN` of `PLUGIN@MARKETPLACE`).
    pub name: String,
    /// Where its files are.
    pub source: PluginSource,
    /// The marketplace's category for it.
    pub category: Option<String>,
    /// Whether it may be installed.
    pub install_policy: InstallPolicy,
    /// When its apps ask for sign-in.
    pub auth_policy: AuthPolicy,
}

/// A marketplace manifest, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marketplace {
    /// Its name, from the manifest.
    pub name: String,
    /// The directory holding it.
    pub root: PathBuf,
    /// The manifest file.
    pub manifest_path: PathBuf,
    /// Its display name, if it gives one.
    pub display_name: Option<String>,
    /// Its plugins, in manifest order (a repeated name counts once).
    pub plugins: Vec<MarketplaceEntry>,
    /// Entries left out, each naming the field at fault.
    pub skipped: Vec<String>,
}

impl Marketplace {
    /// The entry named `plugin`.
    pub fn entry(&self, plugin: &str) -> Option<&MarketplaceEntry> {
        self.plugins.iter().find(|entry| entry.name == plugin)
    }
}

#[derive(Deserialize)]
struct ManifestFile {
    name: String,
    plugins: Vec<Value>,
    #[serde(default)]
    interface: Option<InterfaceFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InterfaceFile {
    #[serde(default)]
    display_name: Option<String>,
}

#[derive(Deserialize)]
struct EntryFile {
    name: String,
    source: Value,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    policy: Option<PolicyFile>,
}

#[derive(Deserialize, Default)]
struct PolicyFile {
    #[serde(default)]
    installation: Option<InstallPolicy>,
    #[serde(default)]
    authentication: Option<AuthPolicy>,
    #[serde(default)]
    products: Option<Vec<String>>,
}

/// The manifest file of the marketplace at `root`, if it has one.
pub(crate) fn manifest_in(root: &Path) -> Option<PathBuf> {
    MARKETPLACE_MANIFESTS
        .iter()
        .map(|relative| root.join(relative))
        .find(|path| path.is_file())
}

/// Reads the marketplace at `root` (a directory holding one of the manifests).
pub fn read_marketplace(root: &Path) -> Result<Marketplace, PluginError> {
    let Some(manifest_path) = manifest_in(root) else {
        return Err(PluginError::InvalidMarketplace {
            path: root.to_path_buf(),
            message: format!(
                "marketplace root does not contain a supported manifest (one of {})",
                MARKETPLACE_MANIFESTS.join(", ")
            ),
        });
    };
    read_manifest(root, &manifest_path)
}

/// Reads the marketplace whose manifest is the file `manifest_path` (one of the supported
/// locations under its root).
pub fn read_marketplace_file(manifest_path: &Path) -> Result<Marketplace, PluginError> {
    if !manifest_path.is_file() {
        return Err(PluginError::InvalidMarketplace {
            path: manifest_path.to_path_buf(),
            message: "the marketplace file does not exist".into(),
        });
    }
    let root = MARKETPLACE_MANIFESTS.iter().find_map(|relative| {
        let mut root = manifest_path;
        for _ in Path::new(relative).components() {
            root = root.parent()?;
        }
        (root.join(relative) == manifest_path).then(|| root.to_path_buf())
    });
    let Some(root) = root else {
        return Err(PluginError::InvalidMarketplace {
            path: manifest_path.to_path_buf(),
            message: format!(
                "not a marketplace manifest location (one of {})",
                MARKETPLACE_MANIFESTS.join(", ")
            ),
        });
    };
    read_manifest(&root, manifest_path)
}

/// Reads the manifest at `manifest_path`, whose marketplace root is `root`.
pub(crate) fn read_manifest(root: &Path, manifest_path: &Path) -> Result<Marketplace, PluginError> {
    let invalid = |message: String| PluginError::InvalidMarketplace {
        path: manifest_path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(manifest_path)
        .map_err(|err| PluginError::io(manifest_path, err))?;
    let mut parser = serde_json::Deserializer::from_str(&text);
    let file: ManifestFile = serde_path_to_error::deserialize(&mut parser)
        .map_err(|err| invalid(crate::plugin_files::field_error(&err)))?;
    if file.name.is_empty() {
        return Err(invalid("name: must not be empty".into()));
    }
    if !valid_marketplace_name(&file.name) {
        return Err(invalid(format!(
            "name: `{}` may only hold ASCII letters, digits, `_` and `-`",
            file.name
        )));
    }
    let mut plugins: Vec<MarketplaceEntry> = Vec::new();
    let mut skipped = Vec::new();
    for (index, raw) in file.plugins.into_iter().enumerate() {
        match read_entry(root, raw) {
            Ok(Some(entry)) => {
                if !plugins.iter().any(|seen| seen.name == entry.name) {
                    plugins.push(entry);
                }
            }
            Ok(None) => {}
            Err(message) => skipped.push(format!(
                "{}: plugins[{index}].{message}",
                manifest_path.display()
            )),
        }
    }
    Ok(Marketplace {
        name: file.name,
        root: root.to_path_buf(),
        manifest_path: manifest_path.to_path_buf(),
        display_name: file.interface.and_then(|interface| interface.display_name),
        plugins,
        skipped,
    })
}

/// One entry; `Ok(None)` for one meant for other products; `Err` names the field at fault.
fn read_entry(root: &Path, raw: Value) -> Result<Option<MarketplaceEntry>, String> {
    let entry: EntryFile = serde_path_to_error::deserialize(raw)
        .map_err(|err| crate::plugin_files::field_error(&err))?;
    if !valid_plugin_name(&entry.name) {
        return Err(format!(
            "name: `{}` may only hold ASCII letters, digits, `.`, `_` and `-`",
            entry.name
        ));
    }
    let policy = entry.policy.unwrap_or_default();
    if policy
        .products
        .as_ref()
        .is_some_and(|products| !products.is_empty() && !products.iter().any(|p| p == "CODEX"))
    {
        return Ok(None);
    }
    Ok(Some(MarketplaceEntry {
        source: read_source(root, &entry.source)?,
        name: entry.name,
        category: entry.category,
        install_policy: policy.installation.unwrap_or_default(),
        auth_policy: policy.authentication.unwrap_or_default(),
    }))
}

fn read_source(root: &Path, source: &Value) -> Result<PluginSource, String> {
    match source {
        Value::String(path) => local_path(root, path).map_err(|why| format!("source: {why}")),
        Value::Object(object) => {
            let kind = object
                .get("source")
                .and_then(Value::as_str)
                .ok_or("source.source: missing (one of local, url, git-subdir, npm)")?;
            match kind {
                "local" => {
                    let path = object
                        .get("path")
                        .and_then(Value::as_str)
                        .ok_or("source.path: missing")?;
                    local_path(root, path).map_err(|why| format!("source.path: {why}"))
                }
                "url" | "git-subdir" | "npm" => {
                    let shown = ["url", "package"]
                        .iter()
                        .find_map(|key| object.get(*key).and_then(Value::as_str))
                        .unwrap_or(kind)
                        .to_string();
                    Ok(PluginSource::Remote {
                        kind: kind.to_string(),
                        shown,
                        details: object.clone(),
                    })
                }
                other => Err(format!(
                    "source.source: `{other}` is not one of local, url, git-subdir, npm"
                )),
            }
        }
        _ => Err("source: expected a path starting with `./` or an object".into()),
    }
}

/// A `./`-relative path inside the marketplace.
fn local_path(root: &Path, path: &str) -> Result<PluginSource, String> {
    let Some(relative) = path.strip_prefix("./") else {
        return Err(format!("`{path}` must start with `./`"));
    };
    let relative = Path::new(relative);
    if relative
        .components()
        .any(|part| !matches!(part, std::path::Component::Normal(_)))
    {
        return Err(format!("`{path}` must stay inside the marketplace"));
    }
    Ok(PluginSource::Local(root.join(relative)))
}
