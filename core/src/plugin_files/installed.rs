//! Installed plugins and what each brings to a session: its skills (named `PLUGIN:SKILL`),
//! its MCP server definitions (resolved by the config loader, where a server configured by
//! hand under the same name wins) and its hooks (trusted like a project's). A plugin counts
//! as installed when `config.toml` records it and its copy exists.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::{McpServersSpec, PluginHooksSpec};
use super::settings::{parse_plugin_settings, read_plugin_settings};
use super::{PluginError, PluginId, PluginManifest, plugin_cache_dir, read_plugin_manifest};

/// One installed, enabled plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledPlugin {
    /// `PLUGIN@MARKETPLACE`.
    pub id: PluginId,
    /// Its installed copy.
    pub dir: PathBuf,
    /// The installed version.
    pub version: String,
    /// Its manifest, read from the copy.
    pub manifest: PluginManifest,
}

impl InstalledPlugin {
    /// Its MCP server definitions as written (Claude Code's shape), by name, with the file
    /// they come from; `Err` names the file at fault.
    pub fn mcp_server_definitions(
        &self,
    ) -> Result<(serde_json::Map<String, Value>, PathBuf), PluginError> {
        match &self.manifest.mcp_servers {
            McpServersSpec::File(path) => {
                let text = match std::fs::read_to_string(path) {
                    Ok(text) => text,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                        return Ok((serde_json::Map::new(), path.clone()));
                    }
                    Err(err) => return Err(PluginError::io(path, err)),
                };
                let value: Value =
                    serde_json::from_str(&text).map_err(|err| PluginError::InvalidPlugin {
                        path: path.clone(),
                        message: format!("not JSON: {err}"),
                    })?;
                match value.get("mcpServers") {
                    Some(Value::Object(servers)) => Ok((servers.clone(), path.clone())),
                    Some(_) => Err(PluginError::InvalidPlugin {
                        path: path.clone(),
                        message: "mcpServers: expected an object of servers by name".into(),
                    }),
                    None => Ok((serde_json::Map::new(), path.clone())),
                }
            }
            McpServersSpec::Inline(servers) => Ok((
                servers.clone(),
                self.manifest
                    .path
                    .clone()
                    .unwrap_or_else(|| self.dir.clone()),
            )),
        }
    }

    /// Its hook definitions: `(the file they are in, the key prefix, the JSON)`.
    pub(crate) fn hook_sources(&self) -> Vec<(PathBuf, String, Value)> {
        let mut sources = Vec::new();
        for (index, spec) in self.manifest.hooks.iter().enumerate() {
            match spec {
                PluginHooksSpec::File(path) => {
                    let Ok(text) = std::fs::read_to_string(path) else {
                        continue;
                    };
                    let Ok(value) = serde_json::from_str::<Value>(&text) else {
                        tracing::warn!(plugin = %self.id, file = %path.display(), "plugin hooks file is not JSON; its hooks are left out");
                        continue;
                    };
                    let relative = path
                        .strip_prefix(&self.dir)
                        .unwrap_or(path)
                        .display()
                        .to_string();
                    sources.push((path.clone(), format!("{}:{relative}", self.id), value));
                }
                PluginHooksSpec::Inline(value) => {
                    let path = self
                        .manifest
                        .path
                        .clone()
                        .unwrap_or_else(|| self.dir.join("plugin.json"));
                    sources.push((
                        path,
                        format!("{}:plugin.json#hooks[{index}]", self.id),
                        value.clone(),
                    ));
                }
            }
        }
        sources
    }

    /// The folders holding its skills.
    pub fn skill_dirs(&self) -> &[PathBuf] {
        &self.manifest.skill_dirs
    }

    /// Where its hooks may keep data (`KEEL_HOME/plugins/data/PLUGIN-MARKETPLACE`).
    pub fn data_dir(&self, keel_home: &Path) -> PathBuf {
        keel_home
            .join("plugins")
            .join("data")
            .join(format!("{}-{}", self.id.plugin, self.id.marketplace))
    }
}

/// The installed copy of plugin `id`: its directory and version (the newest, should several
/// be there), if there is one.
pub fn installed_copy(keel_home: &Path, id: &PluginId) -> Option<(PathBuf, String)> {
    let dir = plugin_cache_dir(keel_home)
        .join(&id.marketplace)
        .join(&id.plugin);
    let mut versions: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| {
            let modified = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (modified, entry.file_name().to_string_lossy().into_owned())
        })
        .collect();
    versions.sort();
    let (_, version) = versions.pop()?;
    Some((dir.join(&version), version))
}

/// Every installed, enabled plugin, in id order; a plugin whose copy has no readable
/// manifest is left out with a logged warning.
pub fn installed_plugins(keel_home: &Path) -> Vec<InstalledPlugin> {
    match read_plugin_settings(keel_home) {
        Ok(settings) => installed_from(keel_home, &settings),
        Err(_) => Vec::new(),
    }
}

/// [`installed_plugins`] with `config.toml`'s text already read.
pub fn installed_plugins_in(keel_home: &Path, config_text: &str) -> Vec<InstalledPlugin> {
    installed_from(keel_home, &parse_plugin_settings(config_text))
}

fn installed_from(keel_home: &Path, settings: &super::PluginSettings) -> Vec<InstalledPlugin> {
    let mut plugins = Vec::new();
    for (id, enabled) in &settings.plugins {
        if !enabled {
            continue;
        }
        let Ok(id) = PluginId::parse(id, None) else {
            tracing::warn!(plugin = %id, "`[plugins]` entry is not PLUGIN@MARKETPLACE; ignored");
            continue;
        };
        let Some((dir, version)) = installed_copy(keel_home, &id) else {
            continue;
        };
        match read_plugin_manifest(&dir, &id.plugin) {
            Ok(manifest) => plugins.push(InstalledPlugin {
                id,
                dir,
                version,
                manifest,
            }),
            Err(err) => tracing::warn!(plugin = %id, %err, "installed plugin left out"),
        }
    }
    plugins
}
