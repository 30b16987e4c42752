//! Resolution of the effective [`Config`]: read `config.toml`, merge `-c` overrides into the
//! parsed TOML, deserialise, pick the profile, then apply typed overrides and defaults.
//!
//! Precedence, highest first: [`ConfigOverrides`] > the selected `[profiles.<name>]` > the
//! top-level keys (file with `-c` overrides merged in) > built-in defaults.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use keel_protocol::{AskForApproval, ReasoningEffort, SandboxMode, SandboxPolicy};

use super::{ReasoningSummaryMode, Verbosity};
use serde_path_to_error::Segment;

use super::mcp_servers::{McpServerConfig, resolve_mcp_servers};
use super::overrides::{ConfigOverrides, apply_cli_override, key_segments};
use super::provider::{ModelProviderInfo, OPENAI_PROVIDER_ID, built_in_model_providers_with};
use super::shell_env::ShellEnvironmentPolicy;
use super::toml_model::{ConfigProfileToml, ConfigToml};
use super::unknown_keys::{self, ConfigWarning};
use crate::config_error::{ConfigError, ConfigOrigin, Result};

/// Name of the configuration file inside `KEEL_HOME`.
pub const CONFIG_FILE_NAME: &str = "config.toml";
/// The model used when neither the file, a profile nor an override names one (Codex 0.171's
/// default, the first model of the catalogue).
pub const DEFAULT_MODEL: &str = crate::model_catalog::DEFAULT_CATALOG_MODEL;
/// Default cap on the bytes of `AGENTS.md` project docs put in the prompt (32 KiB, as Codex).
pub const DEFAULT_PROJECT_DOC_MAX_BYTES: usize = 32 * 1024;
/// Default cap on each tool output sent to the model, in tokens (about 40 KB).
pub const DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT: usize = 10_000;

/// The process state that resolution reads, passed in so tests never touch the real process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEnv {
    /// The absolute directory a relative `cwd` override resolves against; the default cwd.
    pub process_cwd: PathBuf,
    /// The `OPENAI_BASE_URL` variable, replacing the built-in OpenAI base URL when non-blank.
    pub openai_base_url: Option<String>,
    /// Where the built-in `oss` provider listens: `CODEX_OSS_BASE_URL`, else
    /// `http://localhost:$CODEX_OSS_PORT/v1` (port 11434 by default), as Codex reads them.
    pub oss_base_url: Option<String>,
}

impl ConfigEnv {
    /// Reads the current directory and `OPENAI_BASE_URL` from this process.
    pub fn from_process() -> Result<Self> {
        Ok(Self {
            process_cwd: std::env::current_dir().map_err(ConfigError::CurrentDir)?,
            openai_base_url: std::env::var("OPENAI_BASE_URL").ok(),
            oss_base_url: oss_base_url_from(|name| std::env::var(name).ok()),
        })
    }
}

/// The `oss` provider's base URL from `CODEX_OSS_BASE_URL` / `CODEX_OSS_PORT`, if either is set.
pub fn oss_base_url_from(env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let non_blank = |name: &str| env(name).filter(|value| !value.trim().is_empty());
    non_blank("CODEX_OSS_BASE_URL").or_else(|| {
        non_blank("CODEX_OSS_PORT").map(|port| format!("http://localhost:{}/v1", port.trim()))
    })
}

/// The effective configuration of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The model to sample.
    pub model: String,
    /// The id of the selected provider (a key of `model_providers`).
    pub model_provider_id: String,
    /// The selected provider.
    pub model_provider: ModelProviderInfo,
    /// Every known provider: the built-ins, replaced or joined by the file's entries.
    pub model_providers: BTreeMap<String, ModelProviderInfo>,
    /// The models known by name: the built-in catalogue with `model_catalog_json` applied.
    pub model_catalog: std::sync::Arc<crate::model_catalog::ModelCatalog>,
    /// Drive models in code mode where their catalogue entry says so (`features.code_mode`).
    pub code_mode: bool,
    /// When to ask the user before running commands or applying patches.
    pub approval_policy: AskForApproval,
    /// The sandbox for model commands, from `sandbox_mode` and `[sandbox_workspace_write]`.
    pub sandbox_policy: SandboxPolicy,
    /// Which environment variables model commands see.
    pub shell_environment_policy: ShellEnvironmentPolicy,
    /// The absolute working directory of the conversation.
    pub cwd: PathBuf,
    /// The Keel home directory the file was read from.
    pub keel_home: PathBuf,
    /// Where the agent-job database lives (`sqlite_home`, as Codex names it; relative to the
    /// Keel home), so it can sit on another disk; the Keel home by default.
    pub sqlite_home: PathBuf,
    /// Projects the user trusts (`[projects."/abs/path"] trust_level = "trusted"`, as Codex
    /// records it): their own skills load, and a working directory inside one counts.
    pub trusted_projects: Vec<PathBuf>,
    /// Run enabled hooks whether or not their definitions are trusted
    /// (`bypass_hook_trust`; `keel exec --dangerously-bypass-hook-trust`). Only for vetted
    /// automation.
    pub bypass_hook_trust: bool,
    /// Skills the user turned off or on (`[[skills.config]]`, as Codex writes them).
    pub skill_switches: Vec<crate::skills::SkillSwitch>,
    /// Skill folders a client added for the server's lifetime (`skills/extraRoots/set`),
    /// searched before the others; never read from a file.
    pub extra_skill_roots: Vec<PathBuf>,
    /// The processing tier asked of the provider (`service_tier`).
    pub service_tier: Option<super::ServiceTier>,
    /// The selected profile, if any.
    pub active_profile: Option<String>,
    /// Reasoning effort requested from reasoning models; `None` leaves the model's default.
    pub model_reasoning_effort: Option<ReasoningEffort>,
    /// Replaces the built-in base instructions when set.
    pub base_instructions: Option<String>,
    /// Extra developer instructions sent with every turn.
    pub developer_instructions: Option<String>,
    /// Cap on the bytes of `AGENTS.md` project docs included in the prompt.
    pub project_doc_max_bytes: usize,
    /// The model's context window in tokens, when known.
    pub model_context_window: Option<u64>,
    /// Whether sandboxed commands may write the `.git` of writable roots
    /// (`[sandbox_workspace_write] allow_git_writes`).
    pub sandbox_allow_git_writes: bool,
    /// Whether the app-server holds every client request within this configuration's own
    /// sandbox, cwd and writable roots (`[app_server] clients_within_sandbox`).
    pub app_server_clients_within_sandbox: bool,
    /// The sandbox helper, when given explicitly; else it is looked up next to the running
    /// program when a command needs it.
    pub sandbox_executable: Option<PathBuf>,
    /// Offer the model `exec_command`/`write_stdin` (interactive processes) instead of
    /// `shell` (`features.unified_exec`); `None` leaves it to the model family (on for all but
    /// `gpt-4o`/`gpt-4.1`). `shell` calls are accepted either way.
    pub unified_exec: Option<bool>,
    /// Capture the login shell's environment once per conversation and replay it, so
    /// `bash -lc` commands skip the profile (`features.shell_snapshot`, default on).
    pub shell_snapshot: bool,
    /// Run the model's commands on a remote `keel exec-server` (`ws://HOST:PORT`) instead
    /// of in this process.
    pub exec_server_url: Option<String>,
    /// The environment variable holding the bearer token for `exec_server_url`
    /// (`exec_server_auth_token_env`), for an exec-server started with `--ws-auth`; read when
    /// the first command connects.
    pub exec_server_auth_token_env: Option<String>,
    /// A file holding that bearer token (an environment's `auth_token_file`), read when the
    /// first command connects; used when set, before `exec_server_auth_token_env`.
    pub exec_server_auth_token_file: Option<PathBuf>,
    /// The named environment the thread's commands run in (`environment`); `None` for this
    /// machine or an unnamed `exec_server_url`.
    pub environment: Option<String>,
    /// A bearer token given directly (a client's `environment/add`), used before the file
    /// and the variable; never read from a config file. Its `Debug` does not show it.
    pub exec_server_auth_token: Option<keel_exec_server::BearerToken>,
    /// Compact the history once a response reports this many tokens
    /// (`model_auto_compact_token_limit`); by default 90% of the model's context window when
    /// known.
    pub model_auto_compact_token_limit: Option<u64>,
    /// Instructions for writing a compaction summary, instead of Keel's own.
    pub compact_prompt: Option<String>,
    /// Cap on each tool output sent to the model, in tokens (about 4 bytes each); head and
    /// tail are kept.
    pub tool_output_token_limit: usize,
    /// How much reasoning summary to ask reasoning models for (`model_reasoning_summary`).
    pub model_reasoning_summary: ReasoningSummaryMode,
    /// Answer length for models that take it (`model_verbosity`); `None` leaves the model's.
    pub model_verbosity: Option<Verbosity>,
    /// Treat the model as a reasoning model (or not) whatever Keel's family table says
    /// (`model_supports_reasoning_summaries`).
    pub model_supports_reasoning_summaries: Option<bool>,
    /// Offer the provider's built-in `web_search` tool (`tools.web_search`, default off).
    pub web_search: bool,
    /// The switches of built-ins that declare one, by key: `[tools]` values (a boolean, or
    /// a table's `enabled`) over `[features]` ones. A built-in reads its own with
    /// [`Config::switch`].
    pub switches: BTreeMap<String, bool>,
    /// Offer the command tools (`features.shell_tool`, default on).
    pub shell_tool: bool,
    /// Thread goals: offer `get_goal`/`create_goal`/`update_goal` (`features.goals`, default
    /// on).
    pub goals: bool,
    /// Keep workspace checkpoints around each turn of a recorded thread, so a revert can
    /// restore files (`features.checkpoints`, default on).
    pub checkpoints: bool,
    /// Offer `update_plan` (`tools.update_plan.enabled`, default on).
    pub update_plan_tool: bool,
    /// Offer `request_user_input` (`tools.experimental_request_user_input.enabled`, default
    /// on).
    pub request_user_input_tool: bool,
    /// Offer the model the sub-agent tools (`features.multi_agent`, default on).
    pub multi_agent: bool,
    /// Offer the model `spawn_agents_on_csv` (`features.enable_fanout`, default on).
    pub enable_fanout: bool,
    /// Sub-agents and job workers alive at once in one conversation tree
    /// (`agents.max_threads`, default 6).
    pub agents_max_threads: usize,
    /// How deep sub-agents nest (`agents.max_depth`, default 1: sub-agents spawn none).
    pub agents_max_depth: u32,
    /// External MCP servers whose tools the model is offered (`[mcp_servers.NAME]`), by name.
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Tools a client defines and runs itself (the app-server's `dynamicTools`); never read
    /// from `config.toml`. A call becomes a `dynamic_tool_call_request` event.
    pub dynamic_tools: Vec<keel_protocol::DynamicToolSpec>,
    /// Keys of the file or `-c` overrides that Keel does not read (typos, most likely); the
    /// caller shows them, since only it knows where warnings go.
    pub warnings: Vec<ConfigWarning>,
    /// Where telemetry goes (`[otel]`): log events, spans and metrics over OTLP.
    pub otel: super::OtelSettings,
}

impl Config {
    /// Whether the switch `key` is on (`default` when the files do not set it).
    pub fn switch(&self, key: &str, default: bool) -> bool {
        self.switches.get(key).copied().unwrap_or(default)
    }

    /// Loads `$keel_home/config.toml` (a missing file means defaults) and applies the
    /// overrides, reading the cwd and `OPENAI_BASE_URL` from the process.
    pub fn load(
        keel_home: &Path,
        cli_overrides: Vec<(String, toml::Value)>,
        overrides: ConfigOverrides,
    ) -> Result<Self> {
        Self::load_with_env(
            keel_home,
            cli_overrides,
            overrides,
            &ConfigEnv::from_process()?,
        )
    }

    /// [`Config::load`] with the process state given explicitly.
    pub fn load_with_env(
        keel_home: &Path,
        cli_overrides: Vec<(String, toml::Value)>,
        overrides: ConfigOverrides,
        env: &ConfigEnv,
    ) -> Result<Self> {
        let path = keel_home.join(CONFIG_FILE_NAME);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::load_from_toml_str(&text, keel_home, cli_overrides, overrides, env)
    }

    /// Resolves configuration from `toml` as if it were `$keel_home/config.toml`.
    pub fn load_from_toml_str(
        toml: &str,
        keel_home: &Path,
        cli_overrides: Vec<(String, toml::Value)>,
        overrides: ConfigOverrides,
        env: &ConfigEnv,
    ) -> Result<Self> {
        let path = keel_home.join(CONFIG_FILE_NAME);
        let mut table = parse_file(toml, &path)?;
        for (key, value) in &cli_overrides {
            apply_cli_override(&mut table, key, value.clone());
        }
        let (mut file, warnings) = deserialize(table, &path, &cli_overrides)?;
        super::environments_file::merge(&mut file, keel_home)?;
        validate_base_urls(&file, &path, &cli_overrides)?;
        let mcp_servers = resolve_mcp_servers(std::mem::take(&mut file.mcp_servers), |keys| {
            origin_of(keys, &path, &cli_overrides)
        })?;
        let oauth_defaults = super::mcp_oauth::resolve_oauth_defaults(
            file.mcp_oauth_credentials_store.take(),
            file.mcp_oauth_callback_port.take(),
            file.mcp_oauth_callback_url.take(),
        )
        .map_err(|(key, message)| ConfigError::InvalidValue {
            origin: origin_of(&[key.to_string()], &path, &cli_overrides),
            key: key.to_string(),
            message,
        })?;
        let otel = super::otel::resolve_otel(std::mem::take(&mut file.otel), keel_home).map_err(
            |(key, message)| {
                let keys = [
                    "otel".to_string(),
                    key.split('.').next().unwrap_or_default().to_string(),
                ];
                ConfigError::InvalidValue {
                    origin: origin_of(&keys, &path, &cli_overrides),
                    key: format!("otel.{key}"),
                    message,
                }
            },
        )?;
        let mut config = resolve(file, keel_home, &path, overrides, env)?;
        config.otel = otel;
        config.mcp_servers = mcp_servers;
        let credentials = keel_home.join(super::MCP_CREDENTIALS_FILE);
        merge_plugin_mcp_servers(&mut config.mcp_servers, keel_home, toml);
        for server in config.mcp_servers.values_mut() {
            server.oauth.credentials_file = Some(credentials.clone());
            oauth_defaults.apply(&mut server.oauth);
        }
        config.warnings = warnings;
        Ok(config)
    }

    /// Whether `dir` is inside a project the user trusts (compared as written and resolved).
    pub fn project_trusted(&self, dir: &Path) -> bool {
        let real = std::fs::canonicalize(dir).ok();
        self.trusted_projects.iter().any(|project| {
            dir.starts_with(project)
                || real.as_deref().is_some_and(|real| {
                    real.starts_with(project)
                        || std::fs::canonicalize(project).is_ok_and(|p| real.starts_with(p))
                })
        })
    }

    /// The path of the configuration file this config was (or would have been) read from.
    pub fn config_file(&self) -> PathBuf {
        self.keel_home.join(CONFIG_FILE_NAME)
    }

    /// Where the thread's commands run, as clients are told: the environment's name,
    /// `remote` for an unnamed `exec_server_url`, or `local` for this machine.
    pub fn environment_id(&self) -> &str {
        match (&self.environment, &self.exec_server_url) {
            (Some(id), _) => id,
            (None, Some(_)) => "remote",
            (None, None) => super::LOCAL_ENVIRONMENT,
        }
    }
}

fn parse_file(text: &str, path: &Path) -> Result<toml::Table> {
    toml::from_str(text).map_err(|err| {
        let offset = err.span().map_or(0, |span| span.start);
        let (line, column) = line_column(text, offset);
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: err.message().trim().replace('\n', "; "),
        }
    })
}

/// 1-based line and character column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    (line, column)
}

/// The latest `-c` override touching `keys` (or a table containing them), else the file: an
/// override replaced whatever the file had there.
fn origin_of(
    keys: &[String],
    path: &Path,
    cli_overrides: &[(String, toml::Value)],
) -> ConfigOrigin {
    cli_overrides
        .iter()
        .rev()
        .find(|(key, _)| {
            let override_keys = key_segments(key);
            override_keys.starts_with(keys) || keys.starts_with(&override_keys)
        })
        .map_or_else(
            || ConfigOrigin::File(path.to_path_buf()),
            |(key, value)| ConfigOrigin::CliOverride {
                key: key.clone(),
                value: value.clone(),
            },
        )
}

/// Deserialises the merged table, naming the key and the file or `-c` override of an error,
/// and collects a warning for each key no field took.
fn deserialize(
    table: toml::Table,
    path: &Path,
    cli_overrides: &[(String, toml::Value)],
) -> Result<(ConfigToml, Vec<ConfigWarning>)> {
    // Kept to describe the offending value where toml's own message does not.
    let merged = table.clone();
    let mut unused = Vec::new();
    let mut record_unused =
        |key: serde_ignored::Path<'_>| unused.push(unknown_keys::segments(&key));
    let tracked = serde_ignored::Deserializer::new(toml::Value::Table(table), &mut record_unused);
    let result = serde_path_to_error::deserialize(tracked);
    let warnings = unused
        .iter()
        .filter_map(|key| unknown_keys::classify(key, |keys| origin_of(keys, path, cli_overrides)))
        .collect();
    let file = result.map_err(|err| {
        let error_keys: Vec<String> = err
            .path()
            .iter()
            .map_while(|segment| match segment {
                Segment::Map { key } => Some(key.clone()),
                Segment::Seq { .. } | Segment::Enum { .. } | Segment::Unknown => None,
            })
            .collect();
        let origin = origin_of(&error_keys, path, cli_overrides);
        let key = match err.path().to_string() {
            root if root == "." => "(top level)".to_string(),
            key => key,
        };
        let mut message = err.into_inner().message().trim().replace('\n', "; ");
        if message == TOML_NON_STRING_ENUM_MESSAGE
            && let Some(found) = value_at(&merged, &error_keys)
        {
            message = format!("invalid type: {}, expected a string", describe_value(found));
        }
        ConfigError::InvalidValue {
            origin,
            key,
            message,
        }
    })?;
    Ok((file, warnings))
}

/// Checks the URLs the file defines (providers' `base_url`: absolute `http`/`https` with
/// a host; `exec_server_url`: `ws` or `wss`), so a typo fails at load with the key named.
fn validate_base_urls(
    file: &ConfigToml,
    path: &Path,
    cli_overrides: &[(String, toml::Value)],
) -> Result<()> {
    for (id, provider) in &file.model_providers {
        let Some(url) = &provider.base_url else {
            continue;
        };
        let problem = match reqwest::Url::parse(url) {
            Err(err) => Some(format!(
                "`{url}` is not a URL ({err}); expected e.g. `http://localhost:11434/v1`"
            )),
            Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => Some(format!(
                "`{url}` has scheme `{}`; expected `http` or `https`",
                parsed.scheme()
            )),
            Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => {
                Some(format!("`{url}` has no host"))
            }
            Ok(_) => None,
        };
        if let Some(message) = problem {
            let keys = [
                "model_providers".to_string(),
                id.clone(),
                "base_url".to_string(),
            ];
            return Err(ConfigError::InvalidValue {
                origin: origin_of(&keys, path, cli_overrides),
                key: keys.join("."),
                message,
            });
        }
    }
    if let Err((key, message)) = super::environments::choose(
        file.environment.as_deref(),
        &file.environments,
        None,
        None,
        Path::new(""),
    ) {
        let keys: Vec<String> = key.split('.').map(str::to_string).collect();
        return Err(ConfigError::InvalidValue {
            origin: origin_of(&keys, path, cli_overrides),
            key,
            message,
        });
    }
    if let Some(url) = &file.exec_server_url
        && let Some(message) = super::environments::ws_url_problem(url)
    {
        let keys = ["exec_server_url".to_string()];
        return Err(ConfigError::InvalidValue {
            origin: origin_of(&keys, path, cli_overrides),
            key: keys.join("."),
            message,
        });
    }
    Ok(())
}

/// What toml says when an enum field (e.g. `approval_policy = 1`) holds a non-string.
const TOML_NON_STRING_ENUM_MESSAGE: &str = "invalid type: unit variant, expected string only";

fn value_at<'a>(table: &'a toml::Table, keys: &[String]) -> Option<&'a toml::Value> {
    let (first, rest) = keys.split_first()?;
    rest.iter()
        .try_fold(table.get(first)?, |value, key| value.get(key.as_str()))
}

/// Describes a TOML value the way serde's "invalid type" messages do.
fn describe_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => format!("string {text:?}"),
        toml::Value::Integer(number) => format!("integer `{number}`"),
        toml::Value::Float(number) => format!("floating point `{number}`"),
        toml::Value::Boolean(flag) => format!("boolean `{flag}`"),
        toml::Value::Datetime(datetime) => format!("datetime `{datetime}`"),
        toml::Value::Array(_) => "array".to_string(),
        toml::Value::Table(_) => "table".to_string(),
    }
}

/// Sub-agents alive at once when `agents.max_threads` is not set (Codex's default).
const DEFAULT_AGENTS_MAX_THREADS: usize = 6;

fn resolve(
    file: ConfigToml,
    keel_home: &Path,
    path: &Path,
    overrides: ConfigOverrides,
    env: &ConfigEnv,
) -> Result<Config> {
    let ConfigToml {
        model,
        model_provider,
        model_providers: file_providers,
        approval_policy,
        sandbox_mode,
        sandbox_workspace_write,
        shell_environment_policy,
        profile,
        mut profiles,
        model_reasoning_effort,
        base_instructions,
        developer_instructions,
        project_doc_max_bytes,
        model_context_window,
        features,
        exec_server_url,
        exec_server_auth_token_env,
        environment,
        environments,
        model_auto_compact_token_limit,
        compact_prompt,
        tool_output_token_limit,
        agents,
        tools,
        app_server,
        model_reasoning_summary,
        model_verbosity,
        model_supports_reasoning_summaries,
        mcp_servers: _,
        mcp_oauth_credentials_store: _,
        mcp_oauth_callback_port: _,
        mcp_oauth_callback_url: _,
        marketplaces: _,
        plugins: _,
        sqlite_home,
        projects,
        hooks: _,
        bypass_hook_trust,
        skills,
        service_tier,
        openai_base_url,
        model_catalog_json,
        otel: _,
    } = file;
    // Checked at load (`validate_base_urls`), so a failure here cannot happen.
    let chosen = super::environments::choose(
        environment.as_deref(),
        &environments,
        exec_server_url,
        exec_server_auth_token_env,
        keel_home,
    )
    .unwrap_or_default();

    let active_profile = overrides.config_profile.or(profile);
    let profile = match &active_profile {
        None => ConfigProfileToml::default(),
        Some(name) => profiles
            .remove(name)
            .ok_or_else(|| ConfigError::UnknownProfile {
                name: name.clone(),
                known: profiles.keys().cloned().collect(),
                path: path.to_path_buf(),
            })?,
    };

    // The file's `openai_base_url` first (as Codex 0.169 reads it), then `OPENAI_BASE_URL`.
    let openai_base_url = openai_base_url
        .filter(|url| !url.trim().is_empty())
        .or_else(|| env.openai_base_url.clone());
    let mut model_providers =
        built_in_model_providers_with(openai_base_url.as_deref(), env.oss_base_url.as_deref());
    for (id, mut provider) in file_providers {
        if provider.name.trim().is_empty() {
            provider.name = id.clone();
        }
        model_providers.insert(id, provider);
    }
    let model_provider_id = overrides
        .model_provider
        .or(profile.model_provider)
        .or(model_provider)
        .unwrap_or_else(|| OPENAI_PROVIDER_ID.to_string());
    let mut model_provider = model_providers
        .get(&model_provider_id)
        .cloned()
        .ok_or_else(|| ConfigError::UnknownProvider {
            id: model_provider_id.clone(),
            known: model_providers.keys().cloned().collect(),
            path: path.to_path_buf(),
        })?;
    if model_provider.requires_openai_auth {
        model_provider.stored_api_key =
            super::stored_key::read_stored_api_key(keel_home).map_err(|err| {
                ConfigError::InvalidValue {
                    origin: ConfigOrigin::File(keel_home.join(super::stored_key::AUTH_FILE)),
                    key: "OPENAI_API_KEY".to_string(),
                    message: err.to_string(),
                }
            })?;
    }

    let model_catalog = match model_catalog_json {
        None => crate::model_catalog::ModelCatalog::builtin(),
        Some(file) => {
            let file = keel_home.join(file);
            std::sync::Arc::new(
                crate::model_catalog::ModelCatalog::with_file(&file).map_err(|err| {
                    ConfigError::InvalidValue {
                        origin: ConfigOrigin::File(path.to_path_buf()),
                        key: "model_catalog_json".to_string(),
                        message: err.to_string(),
                    }
                })?,
            )
        }
    };

    let cwd = match overrides.cwd {
        Some(cwd) => env.process_cwd.join(cwd),
        None => env.process_cwd.clone(),
    };
    let cwd = without_cur_dir(&cwd);

    let sandbox_mode = overrides
        .sandbox_mode
        .or(profile.sandbox_mode)
        .or(sandbox_mode)
        .unwrap_or_default();
    let sandbox_allow_git_writes = sandbox_workspace_write
        .as_ref()
        .is_some_and(|settings| settings.allow_git_writes);
    let sandbox_policy = match sandbox_mode {
        SandboxMode::ReadOnly => SandboxPolicy::ReadOnly,
        SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        SandboxMode::WorkspaceWrite => {
            let settings = sandbox_workspace_write.unwrap_or_default();
            SandboxPolicy::WorkspaceWrite {
                writable_roots: settings
                    .writable_roots
                    .iter()
                    .map(|root| without_cur_dir(&cwd.join(root)))
                    .collect(),
                network_access: settings.network_access,
                exclude_tmpdir_env_var: settings.exclude_tmpdir_env_var,
                exclude_slash_tmp: settings.exclude_slash_tmp,
            }
        }
    };

    let model = overrides
        .model
        .or(profile.model)
        .or(model)
        .unwrap_or_else(|| DEFAULT_MODEL.to_string());
    let catalogued_summary = model_catalog
        .find(&model)
        .and_then(|entry| entry.default_reasoning_summary);
    Ok(Config {
        model,
        model_provider_id,
        model_provider,
        model_providers,
        model_catalog,
        code_mode: features.code_mode.unwrap_or(true),
        approval_policy: overrides
            .approval_policy
            .or(profile.approval_policy)
            .or(approval_policy)
            .unwrap_or_default(),
        sandbox_policy,
        shell_environment_policy: shell_environment_policy.into(),
        cwd,
        keel_home: keel_home.to_path_buf(),
        sqlite_home: sqlite_home.map_or_else(|| keel_home.to_path_buf(), |dir| keel_home.join(dir)),
        bypass_hook_trust: bypass_hook_trust.unwrap_or(false),
        skill_switches: skills.config,
        extra_skill_roots: Vec::new(),
        service_tier,
        trusted_projects: projects
            .into_iter()
            .filter(|(_, project)| project.trust_level.as_deref() == Some("trusted"))
            .map(|(path, _)| PathBuf::from(path))
            .collect(),
        active_profile,
        model_reasoning_effort: profile.model_reasoning_effort.or(model_reasoning_effort),
        base_instructions: overrides
            .base_instructions
            .or(profile.base_instructions)
            .or(base_instructions),
        developer_instructions: overrides
            .developer_instructions
            .or(profile.developer_instructions)
            .or(developer_instructions),
        project_doc_max_bytes: project_doc_max_bytes.unwrap_or(DEFAULT_PROJECT_DOC_MAX_BYTES),
        model_context_window: profile.model_context_window.or(model_context_window),
        sandbox_allow_git_writes,
        app_server_clients_within_sandbox: app_server.clients_within_sandbox.unwrap_or(false),
        sandbox_executable: overrides.sandbox_executable,
        unified_exec: features.unified_exec,
        shell_snapshot: features.shell_snapshot.unwrap_or(true),
        exec_server_url: chosen.as_ref().map(|remote| remote.url.clone()),
        exec_server_auth_token_env: chosen.as_ref().and_then(|remote| remote.token_env.clone()),
        exec_server_auth_token_file: chosen.as_ref().and_then(|remote| remote.token_file.clone()),
        exec_server_auth_token: chosen
            .as_ref()
            .and_then(|remote| remote.token.as_deref())
            .map(keel_exec_server::BearerToken::new),
        environment: chosen.and_then(|remote| remote.id),
        model_auto_compact_token_limit,
        compact_prompt,
        tool_output_token_limit: tool_output_token_limit.unwrap_or(DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT),
        model_reasoning_summary: profile
            .model_reasoning_summary
            .or(model_reasoning_summary)
            .or(catalogued_summary)
            .unwrap_or_default(),
        model_verbosity: profile.model_verbosity.or(model_verbosity),
        model_supports_reasoning_summaries,
        web_search: tools.web_search.unwrap_or(false),
        switches: features
            .switches
            .iter()
            .chain(&tools.switches)
            .filter_map(|(key, value)| value.0.map(|on| (key.clone(), on)))
            .collect(),
        shell_tool: features.shell_tool.unwrap_or(true),
        goals: features.goals.unwrap_or(true),
        checkpoints: features.checkpoints.unwrap_or(true),
        update_plan_tool: tools
            .update_plan
            .and_then(|switch| switch.enabled)
            .unwrap_or(true),
        request_user_input_tool: tools
            .experimental_request_user_input
            .and_then(|switch| switch.enabled)
            .unwrap_or(true),
        multi_agent: features.multi_agent.unwrap_or(true),
        enable_fanout: features.enable_fanout.unwrap_or(true),
        agents_max_threads: agents
            .max_threads
            .unwrap_or(DEFAULT_AGENTS_MAX_THREADS)
            .max(1),
        agents_max_depth: agents.max_depth.unwrap_or(1),
        mcp_servers: BTreeMap::new(),
        dynamic_tools: Vec::new(),
        warnings: Vec::new(),
        otel: super::OtelSettings::default(),
    })
}

/// Drops `.` components (`/work/./x` → `/work/x`); `..` is kept since symlinks give it meaning.
fn without_cur_dir(path: &Path) -> PathBuf {
    path.components()
        .filter(|component| !matches!(component, Component::CurDir))
        .collect()
}

/// Adds the MCP servers of installed, enabled plugins (read from `config_text`); a server
/// configured by hand under the same name wins, and a plugin whose servers do not resolve is
/// left out with a warning.
fn merge_plugin_mcp_servers(
    servers: &mut BTreeMap<String, McpServerConfig>,
    keel_home: &Path,
    config_text: &str,
) {
    for plugin in crate::plugin_files::installed_plugins_in(keel_home, config_text) {
        match super::plugin_mcp_servers(&plugin) {
            Ok(found) => {
                for (name, server) in found {
                    servers.entry(name).or_insert(server);
                }
            }
            Err(err) => tracing::warn!(plugin = %plugin.id, %err, "plugin MCP servers left out"),
        }
    }
}
