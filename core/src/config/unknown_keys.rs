//! Keys of `config.toml` that Keel does not read: a typo (`modle = "o3"`) gets a warning that
//! names the key and the closest key Keel knows, while keys Codex has and Keel ignores (listed
//! in `docs/configuration.md`) load silently, so a Codex file works unchanged.

use std::fmt;

use crate::config_error::ConfigOrigin;

/// A key the configuration does not use, found while loading it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigWarning {
    /// The file or `-c` override the key came from.
    pub origin: ConfigOrigin,
    /// The dotted key path, e.g. `model_providers.mock.bse_url`.
    pub key: String,
    /// The known key at the same level that is closest to it, if any is close.
    pub suggestion: Option<String>,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: unknown config key `{}`", self.origin, self.key)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean `{suggestion}`?)")?;
        }
        write!(f, "; it is ignored")
    }
}

/// Top-level keys Keel reads (the fields of the raw file model).
pub(crate) const TOP_LEVEL_KEYS: &[&str] = &[
    "agents",
    "app_server",
    "approval_policy",
    "base_instructions",
    "bypass_hook_trust",
    "compact_prompt",
    "developer_instructions",
    "environment",
    "environments",
    "exec_server_auth_token_env",
    "exec_server_url",
    "features",
    "hooks",
    "marketplaces",
    "mcp_oauth_callback_port",
    "mcp_oauth_callback_url",
    "mcp_oauth_credentials_store",
    "mcp_servers",
    "model",
    "model_auto_compact_token_limit",
    "model_catalog_json",
    "model_context_window",
    "model_provider",
    "model_providers",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_supports_reasoning_summaries",
    "model_verbosity",
    "openai_base_url",
    "otel",
    "plugins",
    "profile",
    "profiles",
    "project_doc_max_bytes",
    "projects",
    "sandbox_mode",
    "sandbox_workspace_write",
    "service_tier",
    "shell_environment_policy",
    "skills",
    "sqlite_home",
    "tool_output_token_limit",
    "tools",
];

/// Keys Keel reads inside `[profiles.<name>]`.
pub(crate) const PROFILE_KEYS: &[&str] = &[
    "approval_policy",
    "base_instructions",
    "developer_instructions",
    "model",
    "model_context_window",
    "model_provider",
    "model_reasoning_effort",
    "model_reasoning_summary",
    "model_verbosity",
    "sandbox_mode",
];

/// Keys Keel reads inside `[model_providers.<id>]`.
pub(crate) const PROVIDER_KEYS: &[&str] = &[
    "base_url",
    "chat_reasoning_field",
    "env_http_headers",
    "env_key",
    "env_key_instructions",
    "http_headers",
    "name",
    "query_params",
    "request_max_retries",
    "requires_openai_auth",
    "stream_idle_timeout_ms",
    "stream_max_retries",
    "wire_api",
];

/// Keys Keel reads inside `[sandbox_workspace_write]`.
pub(crate) const SANDBOX_WORKSPACE_WRITE_KEYS: &[&str] = &[
    "allow_git_writes",
    "exclude_slash_tmp",
    "exclude_tmpdir_env_var",
    "network_access",
    "writable_roots",
];

/// Keys Keel reads inside `[shell_environment_policy]`.
pub(crate) const SHELL_ENVIRONMENT_POLICY_KEYS: &[&str] = &[
    "exclude",
    "ignore_default_excludes",
    "include_only",
    "inherit",
    "set",
];

/// Codex keys Keel accepts and ignores, at the top level and in profiles (a whole table when
/// the key names one). Kept in step with the list in `docs/configuration.md`.
pub(crate) const CODEX_KEYS_IGNORED: &[&str] = &[
    "allow_login_shell",
    "allow_symlinked_codex_home",
    "analytics",
    "approvals_reviewer",
    "apps",
    "apps_mcp_product_sku",
    "audio",
    "auto_review",
    "background_terminal_max_timeout",
    "browser_use",
    "chatgpt_base_url",
    "check_for_update_on_startup",
    "cli_auth_credentials_store",
    "cloud",
    "code_mode",
    "computer_use",
    "default_permissions",
    "desktop",
    "disable_paste_burst",
    "experimental_compact_prompt_file",
    "experimental_instructions_file",
    "experimental_realtime_start_instructions",
    "experimental_realtime_webrtc_call_base_url",
    "experimental_realtime_ws_backend_prompt",
    "experimental_realtime_ws_base_url",
    "experimental_realtime_ws_model",
    "experimental_realtime_ws_startup_context",
    "experimental_resume",
    "experimental_thread_store",
    "experimental_thread_store_endpoint",
    "experimental_use_exec_command_tool",
    "experimental_use_freeform_apply_patch",
    "experimental_use_unified_exec_tool",
    "feedback",
    "file_opener",
    "forced_chatgpt_workspace_id",
    "forced_login_method",
    "ghost_snapshot",
    "goals",
    "hide_agent_reasoning",
    "history",
    "include_apply_patch_tool",
    "include_apps_instructions",
    "include_collaboration_mode_instructions",
    "include_environment_context",
    "instructions",
    "js_repl_node_module_dirs",
    "js_repl_node_path",
    "log_dir",
    "mcp_enterprise_managed_auth",
    "mcp_optional_startup_grace_ms",
    "memories",
    "model_auto_compact_token_limit_scope",
    "model_instructions_file",
    "model_max_output_tokens",
    "model_post_turn_compact_threshold_percent",
    "model_reasoning_summary_format",
    "model_supports_reasoning_summaries",
    "notice",
    "notify",
    "orchestrator",
    "oss_provider",
    "permissions",
    "personality",
    "plan_mode_reasoning_effort",
    "project_doc_fallback_filenames",
    "project_root_markers",
    "realtime",
    "responses",
    "responses_api_metadata",
    "review_model",
    "rollout_trace",
    "sandbox",
    "show_raw_agent_reasoning",
    "suppress_unstable_features_warning",
    "thread_unload_delay_secs",
    "tool_suggest",
    "tools_view_image",
    "tools_web_search",
    "trust_level",
    "tui",
    "web_search",
    "windows",
    "windows_wsl_setup_acknowledged",
];

/// Codex provider keys Keel accepts and ignores inside `[model_providers.<id>]`.
pub(crate) const CODEX_PROVIDER_KEYS_IGNORED: &[&str] =
    &["experimental_bearer_token", "supports_websockets"];

/// The keys Keel reads at the table `parent` (a key path), with the Codex keys it ignores
/// there; `None` where Keel does not check keys (inside a free-form map such as
/// `http_headers`, or inside a table it ignores).
fn keys_at(parent: &[String]) -> Option<(&'static [&'static str], &'static [&'static str])> {
    let parent: Vec<&str> = parent.iter().map(String::as_str).collect();
    match parent.as_slice() {
        [] => Some((TOP_LEVEL_KEYS, CODEX_KEYS_IGNORED)),
        ["profiles", _] => Some((PROFILE_KEYS, CODEX_KEYS_IGNORED)),
        ["model_providers", _] => Some((PROVIDER_KEYS, CODEX_PROVIDER_KEYS_IGNORED)),
        ["sandbox_workspace_write"] => Some((SANDBOX_WORKSPACE_WRITE_KEYS, &[])),
        ["shell_environment_policy"] => {
            Some((SHELL_ENVIRONMENT_POLICY_KEYS, &["experimental_use_profile"]))
        }
        _ => None,
    }
}

/// The key names along `path`, leaving out the steps through an `Option` or newtype.
pub(crate) fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut keys = segments(parent);
            keys.push(index.to_string());
            keys
        }
        Path::Map { parent, key } => {
            let mut keys = segments(parent);
            keys.push(key.clone());
            keys
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => segments(parent),
    }
}

/// Turns one key path (its segments) that deserialisation left unused into a warning, or
/// `None` when it is a Codex key Keel ignores on purpose.
pub(crate) fn classify(
    segments: &[String],
    origin_of: impl Fn(&[String]) -> ConfigOrigin,
) -> Option<ConfigWarning> {
    // The first level at which the key leaves what Keel knows decides.
    for depth in 0..segments.len() {
        let (parent, rest) = segments.split_at(depth);
        let Some(name) = rest.first() else {
            break;
        };
        let Some((known, ignored)) = keys_at(parent) else {
            continue;
        };
        if known.contains(&name.as_str()) {
            continue;
        }
        if ignored.contains(&name.as_str()) {
            return None;
        }
        let key = segments[..=depth].join(".");
        return Some(ConfigWarning {
            origin: origin_of(&segments[..=depth]),
            key,
            suggestion: closest(name, known).map(str::to_string),
        });
    }
    None
}

/// The known key most like `name`, when it is close enough to be a plausible typo.
fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|candidate| (strsim::jaro_winkler(name, candidate), *candidate))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use pretty_assertions::assert_eq;

    use super::*;

    fn file(_: &[String]) -> ConfigOrigin {
        ConfigOrigin::File(PathBuf::from("/h/config.toml"))
    }

    fn classify(key: &str, origin_of: fn(&[String]) -> ConfigOrigin) -> Option<ConfigWarning> {
        let segments: Vec<String> = key.split('.').map(str::to_string).collect();
        super::classify(&segments, origin_of)
    }

    #[test]
    fn a_typo_gets_the_closest_key() {
        let warning = classify("modle", file);
        assert_eq!(
            warning.map(|w| w.to_string()),
            Some(
                "/h/config.toml: unknown config key `modle` (did you mean `model`?); it is ignored"
                    .to_string()
            )
        );
        let nested = classify("model_providers.mock.bse_url", file);
        assert_eq!(
            nested.and_then(|w| w.suggestion),
            Some("base_url".to_string())
        );
    }

    #[test]
    fn codex_keys_and_free_form_maps_are_not_warned_about() {
        for key in [
            "notify",
            "mcp_servers.github.command",
            "tools.web_search",
            "profiles.fast.model_verbosity",
            "model_providers.azure.requires_openai_auth",
            "model_providers.azure.http_headers.X-Anything",
        ] {
            assert_eq!(classify(key, file), None, "{key}");
        }
    }

    #[test]
    fn an_unlike_key_gets_no_suggestion() {
        let warning = classify("zzz_nothing_like_it", file);
        assert_eq!(
            warning.map(|w| (w.key, w.suggestion)),
            Some(("zzz_nothing_like_it".to_string(), None))
        );
    }
}
