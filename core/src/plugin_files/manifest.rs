//! A plugin's manifest (`plugin.json`): found as a root `plugin.json` in the Agent Plugins
//! format (its `$schema` names it), else `.codex-plugin/plugin.json`, `.claude-plugin/plugin.json`
//! or `.cursor-plugin/plugin.json`. Every field is optional; the defaults are Claude Code's
//! layout: skills in `skills/`, MCP servers in `.mcp.json`, hooks in `hooks/hooks.json`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::PluginError;

/// The `$schema` that makes a root `plugin.json` an Agent Plugins manifest.
const AGENT_PLUGINS_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";

/// Where a plugin's manifest may be, after the Agent Plugins root file.
const MANIFESTS: [&str; 3] = [
    ".codex-plugin/plugin.json",
    ".claude-plugin/plugin.json",
    ".cursor-plugin/plugin.json",
];

/// How a plugin presents itself in a client (`interface` in the manifest).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginInterfaceManifest {
    /// The name shown.
    pub display_name: Option<String>,
    /// A one-line summary.
    pub short_description: Option<String>,
    /// The full description.
    pub long_description: Option<String>,
    /// Who made it.
    pub developer_name: Option<String>,
    /// Its category.
    pub category: Option<String>,
    #[serde(default)]
    /// What it can do, as labels.
    pub capabilities: Vec<String>,
    #[serde(rename = "websiteURL")]
    /// Its website.
    pub website_url: Option<String>,
    #[serde(rename = "privacyPolicyURL")]
    /// Its privacy policy.
    pub privacy_policy_url: Option<String>,
    #[serde(rename = "termsOfServiceURL")]
    /// Its terms of service.
    pub terms_of_service_url: Option<String>,
    /// Prompts a client may suggest.
    pub default_prompt: Option<Vec<String>>,
    /// Its colour.
    pub brand_color: Option<String>,
}

/// A plugin's manifest, read (paths resolved against the plugin directory).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginManifest {
    /// The manifest file, if the plugin has one.
    pub path: Option<PathBuf>,
    /// Its name, when the manifest gives one.
    pub name: Option<String>,
    /// Its version: the name of the directory it is installed in (`local` without one).
    pub version: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// Search words.
    pub keywords: Vec<String>,
    /// How clients show it.
    pub interface: Option<PluginInterfaceManifest>,
    /// Folders holding its skills.
    pub skill_dirs: Vec<PathBuf>,
    /// Its MCP servers: a file holding `{"mcpServers": …}`, or the servers inline.
    pub mcp_servers: McpServersSpec,
    /// Its hooks: files in Claude Code's `hooks.json` format, or inline.
    pub hooks: Vec<PluginHooksSpec>,
}

/// Where a plugin's hooks are defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginHooksSpec {
    /// A file in Claude Code's `hooks.json` format.
    File(PathBuf),
    /// `{"hooks": {…}}` written in the manifest.
    Inline(Value),
}

/// Where a plugin's MCP servers are defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServersSpec {
    /// A JSON file with an `mcpServers` object.
    File(PathBuf),
    /// The servers, by name, as written in the manifest.
    Inline(serde_json::Map<String, Value>),
}

impl Default for McpServersSpec {
    fn default() -> Self {
        Self::File(PathBuf::from(".mcp.json"))
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ManifestFile {
    #[serde(rename = "$schema", default)]
    schema: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    interface: Option<PluginInterfaceManifest>,
    #[serde(default)]
    skills: Option<Value>,
    #[serde(default)]
    mcp_servers: Option<Value>,
    #[serde(default)]
    hooks: Option<Value>,
}

/// The manifest file of the plugin in `dir`, if any.
fn manifest_in(dir: &Path) -> Option<PathBuf> {
    let root = dir.join("plugin.json");
    if let Ok(text) = std::fs::read_to_string(&root)
        && serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|value| {
                value
                    .get("$schema")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .is_some_and(|schema| schema == AGENT_PLUGINS_SCHEMA)
    {
        return Some(root);
    }
    MANIFESTS
        .iter()
        .map(|relative| dir.join(relative))
        .find(|path| path.is_file())
}

/// Reads the manifest of the plugin in `dir`; `expected_name` is the marketplace's name for
/// it, which a manifest `name` must match.
pub fn read_plugin_manifest(
    dir: &Path,
    expected_name: &str,
) -> Result<PluginManifest, PluginError> {
    let Some(path) = manifest_in(dir) else {
        return Err(PluginError::InvalidPlugin {
            path: dir.to_path_buf(),
            message: format!(
                "missing plugin.json (looked for an Agent Plugins `plugin.json`, then {})",
                MANIFESTS.join(", ")
            ),
        });
    };
    let invalid = |message: String| PluginError::InvalidPlugin {
        path: path.clone(),
        message,
    };
    let text = std::fs::read_to_string(&path).map_err(|err| PluginError::io(&path, err))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|err| invalid(format!("not JSON: {err}")))?;
    // Codex accepts `[]` as an empty manifest; so does Keel.
    let file: ManifestFile = if value.as_array().is_some_and(Vec::is_empty) {
        ManifestFile::default()
    } else {
        serde_path_to_error::deserialize(value)
            .map_err(|err| invalid(crate::plugin_files::field_error(&err)))?
    };
    let _ = file.schema;
    if let Some(name) = &file.name
        && name != expected_name
    {
        return Err(invalid(format!(
            "name: `{name}` does not match the marketplace's plugin name `{expected_name}`"
        )));
    }
    let version = match file.version {
        None => None,
        Some(Value::String(version)) => {
            if version.trim().is_empty() {
                return Err(invalid("version: must not be blank".into()));
            }
            if !version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '_' | '-'))
            {
                return Err(invalid(format!(
                    "version: `{version}` may only hold ASCII letters, digits, `.`, `+`, `_` and `-`"
                )));
            }
            Some(version)
        }
        Some(_) => return Err(invalid("version: expected a string".into())),
    };
    let skill_dirs = match file.skills {
        None => vec![dir.join("skills")],
        Some(Value::String(relative)) => {
            vec![inside(dir, &relative).map_err(|why| invalid(format!("skills: {why}")))?]
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str()
                    .ok_or_else(|| format!("skills[{index}]: expected a path"))
                    .and_then(|relative| {
                        inside(dir, relative).map_err(|why| format!("skills[{index}]: {why}"))
                    })
                    .map_err(&invalid)
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(invalid("skills: expected a path or a list of paths".into())),
    };
    let mcp_servers = match file.mcp_servers {
        None => McpServersSpec::File(dir.join(".mcp.json")),
        Some(Value::String(relative)) => McpServersSpec::File(
            inside(dir, &relative).map_err(|why| invalid(format!("mcpServers: {why}")))?,
        ),
        Some(Value::Object(mut servers)) => {
            // Either the servers themselves or a `{"mcpServers": {…}}` wrapper.
            match servers.remove("mcpServers") {
                Some(Value::Object(inner)) if servers.is_empty() => McpServersSpec::Inline(inner),
                Some(other) => {
                    servers.insert("mcpServers".into(), other);
                    McpServersSpec::Inline(servers)
                }
                None => McpServersSpec::Inline(servers),
            }
        }
        Some(_) => return Err(invalid("mcpServers: expected a path or an object".into())),
    };
    let hooks = match file.hooks {
        None => vec![PluginHooksSpec::File(dir.join("hooks/hooks.json"))],
        Some(Value::String(relative)) => vec![PluginHooksSpec::File(
            inside(dir, &relative).map_err(|why| invalid(format!("hooks: {why}")))?,
        )],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str()
                    .ok_or_else(|| format!("hooks[{index}]: expected a path"))
                    .and_then(|relative| {
                        inside(dir, relative).map_err(|why| format!("hooks[{index}]: {why}"))
                    })
                    .map(PluginHooksSpec::File)
                    .map_err(&invalid)
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Object(object)) if object.contains_key("hooks") => {
            vec![PluginHooksSpec::Inline(Value::Object(object))]
        }
        Some(Value::Object(_)) => vec![PluginHooksSpec::File(dir.join("hooks/hooks.json"))],
        Some(_) => {
            return Err(invalid(
                "hooks: expected a path, a list of paths or an object".into(),
            ));
        }
    };
    Ok(PluginManifest {
        path: Some(path.clone()),
        name: file.name,
        version,
        description: file.description,
        keywords: file.keywords,
        interface: file.interface,
        skill_dirs,
        mcp_servers,
        hooks,
    })
}

/// `relative` (with or without a leading `./`) inside `dir`.
fn inside(dir: &Path, relative: &str) -> Result<PathBuf, String> {
    let trimmed = relative.strip_prefix("./").unwrap_or(relative);
    let path = Path::new(trimmed);
    if path.components().any(|part| {
        !matches!(
            part,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err(format!("`{relative}` must stay inside the plugin"));
    }
    Ok(dir.join(path))
}
