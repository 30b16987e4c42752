//! Configuration: `$KEEL_HOME/config.toml`, with the same keys and meanings as Codex's
//! `config.toml` so a user's existing file works unchanged.
//!
//! Data flows one way:
//! 1. [`find_keel_home`] picks the directory (`KEEL_HOME`, else `~/.keel`);
//! 2. the file is parsed into a TOML table (a missing file is an empty one);
//! 3. `-c key.path=value` overrides ([`parse_cli_override`]) are merged into that table;
//! 4. the table is deserialised into the raw file model; keys Keel does not read become
//!    [`ConfigWarning`]s (naming the closest known key), except Codex keys Keel ignores on
//!    purpose, and each provider's `base_url` is checked;
//! 5. the selected `[profiles.<name>]`, then [`ConfigOverrides`], win over the top-level keys,
//!    and defaults fill the rest, giving a [`Config`].
//!
//! Errors name the file or override, the key and what was expected; see [`ConfigError`].
//!
//! Defaults: model [`DEFAULT_MODEL`], provider `openai`, approval `on-request`, sandbox
//! `read-only`, 4 request retries, 5 stream retries, 300 s stream idle timeout, 32 KiB of
//! project docs.

mod edit;
mod environments;
mod environments_file;
mod features;
mod mcp_oauth;
mod mcp_servers;
mod otel;
mod overrides;
mod provider;
mod resolve;
mod shell_env;
mod stored_key;
mod switch_value;
mod toml_model;
mod unknown_keys;

#[cfg(test)]
mod tests;

use std::ffi::OsStr;
use std::path::PathBuf;

pub use crate::config_error::{ConfigError, ConfigOrigin, Result};
pub use crate::reasoning_settings::{ReasoningSummaryMode, ServiceTier, Verbosity};
pub use edit::{
    ConfigEdit, ConfigWriteError, ConfigWritten, MergeStrategy, config_version, write_config_edits,
};
pub use environments::{EnvironmentToml, LOCAL_ENVIRONMENT};
pub use environments_file::ENVIRONMENTS_FILE_NAME;
pub use features::{FeatureInfo, KEEL_FEATURES};
pub use mcp_oauth::{
    MCP_CREDENTIALS_FILE, McpCredentialsStore, McpOAuthSettings, TokenEndpointAuthMethod,
};
pub use mcp_servers::{
    DEFAULT_MCP_STARTUP_TIMEOUT, DEFAULT_MCP_TOOL_TIMEOUT, McpServerConfig, McpServerTransport,
    plugin_mcp_servers, resolve_plugin_mcp_server,
};
pub use otel::{DEFAULT_OTEL_ENVIRONMENT, OtelExporter, OtelSettings, OtelTls, OtlpHttpProtocol};
pub use overrides::{ConfigOverrides, parse_cli_override};
pub use provider::{
    DEFAULT_REQUEST_MAX_RETRIES, DEFAULT_STREAM_IDLE_TIMEOUT_MS, DEFAULT_STREAM_MAX_RETRIES,
    LMSTUDIO_DEFAULT_BASE_URL, LMSTUDIO_PROVIDER_ID, MAX_REQUEST_MAX_RETRIES,
    MAX_STREAM_MAX_RETRIES, ModelProviderInfo, OLLAMA_DEFAULT_BASE_URL, OLLAMA_PROVIDER_ID,
    OPENAI_DEFAULT_BASE_URL, OPENAI_PROVIDER_ID, OSS_PROVIDER_ID, WireApi,
    built_in_model_providers, built_in_model_providers_with, process_env,
};
pub use resolve::{
    CONFIG_FILE_NAME, Config, ConfigEnv, DEFAULT_MODEL, DEFAULT_PROJECT_DOC_MAX_BYTES,
    oss_base_url_from,
};
pub use shell_env::{
    CORE_VARS, DEFAULT_EXCLUDES, ShellEnvironmentPolicy, ShellEnvironmentPolicyInherit,
    glob_matches,
};
pub use stored_key::{
    AUTH_FILE, StoredApiKey, StoredKeyError, read_stored_api_key, remove_stored_api_key,
    store_api_key,
};
pub use unknown_keys::ConfigWarning;

/// The environment variable naming the Keel home directory.
pub const KEEL_HOME_ENV: &str = "KEEL_HOME";

/// The Keel home directory: `env_value` (the `KEEL_HOME` variable) when set and non-empty,
/// else `~/.keel`. A relative `KEEL_HOME` is made absolute against the current directory.
pub fn find_keel_home(env_value: Option<&OsStr>) -> Result<PathBuf> {
    match env_value.filter(|value| !value.is_empty()) {
        Some(value) => std::path::absolute(value).map_err(ConfigError::CurrentDir),
        None => dirs::home_dir()
            .map(|home| home.join(".keel"))
            .ok_or(ConfigError::NoHomeDir),
    }
}

/// [`find_keel_home`] with the value of `KEEL_HOME` read from this process.
pub fn keel_home_from_process() -> Result<PathBuf> {
    find_keel_home(std::env::var_os(KEEL_HOME_ENV).as_deref())
}
