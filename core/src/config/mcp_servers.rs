//! `[mcp_servers.NAME]`: the external MCP servers whose tools the model is offered, with
//! Codex's keys so an existing Codex setup works unchanged.
//!
//! A server is either a program Keel starts and speaks to over stdio (`command`, `args`,
//! `env`, `env_vars`, `cwd`) or a Streamable HTTP endpoint (`url`, `bearer_token_env_var`,
//! `http_headers`, `env_http_headers`). Unlike the rest of the file, unknown keys here are
//! errors: a mistyped `comand` would otherwise leave a server silently unconfigured.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::mcp_oauth::{McpOAuthSettings, McpOAuthToml, resolve_oauth};
use crate::config_error::{ConfigError, ConfigOrigin, Result};

/// How long a server may take to start and list its tools when `startup_timeout_sec` is not
/// set (Codex's default).
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one tool call may take when `tool_timeout_sec` is not set (Codex's default).
pub const DEFAULT_MCP_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One `[mcp_servers.NAME]` table as written.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct McpServerToml {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub env_vars: Option<Vec<String>>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub bearer_token_env_var: Option<String>,
    /// Codex refuses an inline token; so does Keel, with what to write instead.
    pub bearer_token: Option<String>,
    pub http_headers: Option<BTreeMap<String, String>>,
    pub env_http_headers: Option<BTreeMap<String, String>>,
    pub enabled: Option<bool>,
    pub required: Option<bool>,
    pub startup_timeout_sec: Option<f64>,
    pub startup_timeout_ms: Option<u64>,
    pub tool_timeout_sec: Option<f64>,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Option<Vec<String>>,
    /// OAuth settings (see `mcp_oauth.rs`).
    pub scopes: Option<Vec<String>>,
    pub oauth_resource: Option<String>,
    pub oauth: Option<McpOAuthToml>,
}

/// An external MCP server, resolved from its table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct McpServerConfig {
    /// How to reach it.
    pub transport: McpServerTransport,
    /// `false` keeps the entry but neither starts it nor offers its tools.
    pub enabled: bool,
    /// `required = true`: a turn fails, naming the server, when it cannot start.
    pub required: bool,
    /// Bound on starting the server and listing its tools.
    pub startup_timeout: Duration,
    /// Bound on each tool call.
    pub tool_timeout: Duration,
    /// Only these tools are offered, when set.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// How to log in when the server asks for OAuth.
    pub oauth: McpOAuthSettings,
    /// The installed plugin that brought it (`PLUGIN@MARKETPLACE`); `None` when configured
    /// by hand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_id: Option<String>,
}

/// How Keel reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpServerTransport {
    /// A program Keel starts; MCP runs over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of the ones it inherits.
        env: BTreeMap<String, String>,
        /// Variables copied from Keel's environment by name (Codex's `env_vars`).
        env_vars: Vec<String>,
        /// Its working directory; Keel's when unset.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    StreamableHttp {
        /// The endpoint.
        url: String,
        /// The environment variable holding a bearer token sent with every request.
        bearer_token_env_var: Option<String>,
        /// Headers sent with every request.
        http_headers: BTreeMap<String, String>,
        /// Headers whose values are read from these environment variables.
        env_http_headers: BTreeMap<String, String>,
    },
}

/// Resolves every table, or fails naming the first bad server and key. `origin` says which
/// file or `-c` override a key path came from.
pub(crate) fn resolve_mcp_servers(
    raw: BTreeMap<String, McpServerToml>,
    origin: impl Fn(&[String]) -> ConfigOrigin,
) -> Result<BTreeMap<String, McpServerConfig>> {
    let mut servers = BTreeMap::new();
    for (name, table) in raw {
        let invalid = |key: Option<&str>, message: String| {
            let mut keys = vec!["mcp_servers".to_string(), name.clone()];
            keys.extend(key.map(str::to_string));
            ConfigError::InvalidValue {
                origin: origin(&keys),
                key: keys.join("."),
                message,
            }
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(invalid(
                None,
                format!("server name `{name}` may only hold ASCII letters, digits, `_` and `-`"),
            ));
        }
        let server = resolve_one(table).map_err(|(key, message)| invalid(key, message))?;
        servers.insert(name, server);
    }
    Ok(servers)
}

type Problem = (Option<&'static str>, String);

fn resolve_one(table: McpServerToml) -> std::result::Result<McpServerConfig, Problem> {
    if table.bearer_token.is_some() {
        return Err((
            Some("bearer_token"),
            "inline tokens are not accepted; put the token in an environment variable and \
             name it in `bearer_token_env_var`"
                .to_string(),
        ));
    }
    let transport = match (table.command, table.url) {
        (Some(_), Some(_)) => {
            return Err((
                None,
                "set either `command` (a stdio server) or `url` (Streamable HTTP), not both"
                    .to_string(),
            ));
        }
        (None, None) => {
            return Err((
                None,
                "no transport: set `command` (a stdio server) or `url` (Streamable HTTP)"
                    .to_string(),
            ));
        }
        (Some(command), None) => {
            let http_only = [
                ("bearer_token_env_var", table.bearer_token_env_var.is_some()),
                ("http_headers", table.http_headers.is_some()),
                ("env_http_headers", table.env_http_headers.is_some()),
            ];
            if let Some((key, _)) = http_only.iter().find(|(_, set)| *set) {
                return Err((
                    Some(key),
                    "applies to Streamable HTTP servers (`url`), not to a stdio `command`"
                        .to_string(),
                ));
            }
            if command.trim().is_empty() {
                return Err((Some("command"), "is empty".to_string()));
            }
            McpServerTransport::Stdio {
                command,
                args: table.args.unwrap_or_default(),
                env: table.env.unwrap_or_default(),
                env_vars: table.env_vars.unwrap_or_default(),
                cwd: table.cwd,
            }
        }
        (None, Some(url)) => {
            let stdio_only = [
                ("args", table.args.is_some()),
                ("env", table.env.is_some()),
                ("env_vars", table.env_vars.is_some()),
                ("cwd", table.cwd.is_some()),
            ];
            if let Some((key, _)) = stdio_only.iter().find(|(_, set)| *set) {
                return Err((
                    Some(key),
                    "applies to stdio servers (`command`), not to a `url`".to_string(),
                ));
            }
            match reqwest::Url::parse(&url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
                Ok(parsed) => {
                    return Err((
                        Some("url"),
                        format!(
                            "`{url}` has scheme `{}`; expected `http` or `https`",
                            parsed.scheme()
                        ),
                    ));
                }
                Err(err) => {
                    return Err((
                        Some("url"),
                        format!(
                            "`{url}` is not a URL ({err}); expected e.g. `http://127.0.0.1:3001/mcp`"
                        ),
                    ));
                }
            }
            McpServerTransport::StreamableHttp {
                url,
                bearer_token_env_var: table.bearer_token_env_var,
                http_headers: table.http_headers.unwrap_or_default(),
                env_http_headers: table.env_http_headers.unwrap_or_default(),
            }
        }
    };
    let startup_timeout = match (table.startup_timeout_sec, table.startup_timeout_ms) {
        (Some(seconds), _) => seconds_to_duration(seconds).ok_or((
            Some("startup_timeout_sec"),
            format!("`{seconds}` is not a positive number of seconds"),
        ))?,
        (None, Some(millis)) => Duration::from_millis(millis),
        (None, None) => DEFAULT_MCP_STARTUP_TIMEOUT,
    };
    let tool_timeout = match table.tool_timeout_sec {
        Some(seconds) => seconds_to_duration(seconds).ok_or((
            Some("tool_timeout_sec"),
            format!("`{seconds}` is not a positive number of seconds"),
        ))?,
        None => DEFAULT_MCP_TOOL_TIMEOUT,
    };
    let oauth = resolve_oauth(table.oauth, table.scopes, table.oauth_resource)
        .map_err(|(key, message)| (Some(key), message))?;
    Ok(McpServerConfig {
        transport,
        oauth,
        enabled: table.enabled.unwrap_or(true),
        required: table.required.unwrap_or(false),
        startup_timeout,
        tool_timeout,
        enabled_tools: table.enabled_tools,
        disabled_tools: table.disabled_tools.unwrap_or_default(),
        plugin_id: None,
    })
}

/// The MCP servers of installed plugin `plugin`, by name; `Err` names the file and the server
/// at fault.
pub fn plugin_mcp_servers(
    plugin: &crate::plugin_files::InstalledPlugin,
) -> std::result::Result<BTreeMap<String, McpServerConfig>, crate::plugin_files::PluginError> {
    let (servers, origin) = plugin.mcp_server_definitions()?;
    let mut resolved = BTreeMap::new();
    for (name, server) in servers {
        let mut config =
            resolve_plugin_mcp_server(&name, &server, &plugin.dir).map_err(|message| {
                crate::plugin_files::PluginError::InvalidPlugin {
                    path: origin.clone(),
                    message: format!("mcpServers.{name}: {message}"),
                }
            })?;
        config.plugin_id = Some(plugin.id.to_string());
        resolved.insert(name, config);
    }
    Ok(resolved)
}

/// A plugin's MCP server written in Claude Code's `.mcp.json` shape (`command`, `args`,
/// `env`, `cwd`, or `type` with `url` and `headers`); a relative `cwd` is inside the plugin's
/// directory `dir`, as is the server's working directory when it names none. `Err` names the
/// field at fault.
pub fn resolve_plugin_mcp_server(
    name: &str,
    server: &serde_json::Value,
    dir: &std::path::Path,
) -> std::result::Result<McpServerConfig, String> {
    let serde_json::Value::Object(fields) = server else {
        return Err(format!("server `{name}` must be an object"));
    };
    let mut fields = fields.clone();
    // Claude Code names the transport; Keel tells it from `command` or `url`.
    fields.remove("type");
    if let Some(headers) = fields.remove("headers") {
        fields.insert("http_headers".into(), headers);
    }
    if fields.contains_key("command") {
        let cwd = match fields.get("cwd").and_then(serde_json::Value::as_str) {
            Some(cwd) => dir.join(cwd),
            None => dir.to_path_buf(),
        };
        fields.insert(
            "cwd".into(),
            serde_json::Value::String(cwd.display().to_string()),
        );
    }
    let table: McpServerToml = serde_path_to_error::deserialize(serde_json::Value::Object(fields))
        .map_err(|err| crate::plugin_files::field_error(&err))?;
    resolve_one(table).map_err(|(key, message)| match key {
        Some(key) => format!("{key}: {message}"),
        None => message,
    })
}

/// A positive, finite number of seconds (at most a day) as a duration.
fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    (seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0)
        .then(|| Duration::from_secs_f64(seconds))
}

impl McpServerConfig {
    /// Whether the model is offered `tool` of this server.
    pub fn offers_tool(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|name| name == tool))
            && !self.disabled_tools.iter().any(|name| name == tool)
    }
}
