//! What an installed, enabled plugin brings to a session: its skills (named
//! `PLUGIN:SKILL`), its MCP servers (as if configured under `[mcp_servers]`, where a server
//! configured by hand under the same name wins) and its hooks (trusted like a project's).
//! A plugin counts as installed when `config.toml` records it and its copy exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::catalog::installed_copy;
use super::manifest::McpServersSpec;
use super::settings::read_plugin_settings;
use super::{PluginError, PluginId, PluginManifest, read_plugin_manifest};
use crate::config::McpServerConfig;

/// Where a plugin's hooks are defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginHooksSpec {
    /// A file in Claude Code's `hooks.json` format.
    File(PathBuf),
    /// `{"hooks": {…}}` written in the manifest.
    Inline(Value),
}

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
    /// Its MCP servers, by name; `Err` names the file and the server at fault.
    pub fn mcp_servers(&self) -> Result<BTreeMap<String, McpServerConfig>, PluginError> {
        let (servers, origin) = match &self.manifest.mcp_servers {
            McpServersSpec::File(path) => {
                let text = match std::fs::read_to_string(path) {
                    Ok(text) => text,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(BTreeMap::new());
                    }
                    Err(err) => return Err(PluginError::io(path, err)),
                };
                let value: Value =
                    serde_json::from_str(&text).map_err(|err| PluginError::InvalidPlugin {
                        path: path.clone(),
                        message: format!("not JSON: {err}"),
                    })?;
                let servers = match value.get("mcpServers") {
                    Some(Value::Object(servers)) => servers.clone(),
                    Some(_) => {
                        return Err(PluginError::InvalidPlugin {
                            path: path.clone(),
                            message: "mcpServers: expected an object of servers by name".into(),
                        });
                    }
                    None => serde_json::Map::new(),
                };
                (servers, path.clone())
            }
            McpServersSpec::Inline(servers) => (
                servers.clone(),
                self.manifest
                    .path
                    .clone()
                    .unwrap_or_else(|| self.dir.clone()),
            ),
        };
        let mut resolved = BTreeMap::new();
        for (name, server) in servers {
            let mut config = crate::config::resolve_plugin_mcp_server(&name, &server, &self.dir)
                .map_err(|message| PluginError::InvalidPlugin {
                    path: origin.clone(),
                    message: format!("mcpServers.{name}: {message}"),
                })?;
            config.plugin_id = Some(self.id.to_string());
            resolved.insert(name, config);
        }
        Ok(resolved)
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

/// Every installed, enabled plugin, in id order; a plugin whose copy has no readable
/// manifest is left out with a logged warning.
pub fn installed_plugins(keel_home: &Path) -> Vec<InstalledPlugin> {
    let Ok(settings) = read_plugin_settings(keel_home) else {
        return Vec::new();
    };
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
