//! End-to-end tests of loading: file + `-c` overrides + profiles + typed overrides.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use keel_protocol::{AskForApproval, ReasoningEffort, SandboxMode, SandboxPolicy};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

use super::*;

mod edits;
mod errors;
mod mcp_servers;
mod unknown_keys;

pub(super) type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

pub(super) fn test_env() -> ConfigEnv {
    ConfigEnv {
        process_cwd: PathBuf::from("/work/project"),
        openai_base_url: None,
        oss_base_url: None,
    }
}

/// A temp `KEEL_HOME` holding `toml` as its `config.toml` (no file when `None`).
pub(super) fn home_with(toml: Option<&str>) -> std::io::Result<TempDir> {
    let home = tempfile::tempdir()?;
    if let Some(toml) = toml {
        std::fs::write(home.path().join(CONFIG_FILE_NAME), toml)?;
    }
    Ok(home)
}

fn cli(args: &[&str]) -> Vec<(String, toml::Value)> {
    args.iter()
        .map(|arg| parse_cli_override(arg).unwrap())
        .collect()
}

pub(super) fn load(home: &Path, cli_args: &[&str], overrides: ConfigOverrides) -> Result<Config> {
    Config::load_with_env(home, cli(cli_args), overrides, &test_env())
}

fn load_str(toml: &str, cli_args: &[&str]) -> Result<Config> {
    Config::load_from_toml_str(
        toml,
        Path::new("/home/u/.keel"),
        cli(cli_args),
        ConfigOverrides::default(),
        &test_env(),
    )
}

pub(super) fn load_err(toml: &str, cli_args: &[&str]) -> String {
    load_str(toml, cli_args).unwrap_err().to_string()
}

fn default_config(keel_home: &Path) -> Config {
    let model_providers = built_in_model_providers(None);
    Config {
        model: "gpt-6.2-sol".to_string(),
        model_provider_id: "openai".to_string(),
        model_provider: model_providers["openai"].clone(),
        model_providers,
        model_catalog: crate::model_catalog::ModelCatalog::builtin(),
        code_mode: true,
        approval_policy: AskForApproval::OnRequest,
        sandbox_policy: SandboxPolicy::ReadOnly,
        shell_environment_policy: ShellEnvironmentPolicy::default(),
        cwd: PathBuf::from("/work/project"),
        keel_home: keel_home.to_path_buf(),
        sqlite_home: keel_home.to_path_buf(),
        trusted_projects: Vec::new(),
        bypass_hook_trust: false,
        skill_switches: Vec::new(),
        extra_skill_roots: Vec::new(),
        service_tier: None,
        active_profile: None,
        model_reasoning_effort: None,
        base_instructions: None,
        developer_instructions: None,
        project_doc_max_bytes: 32 * 1024,
        model_context_window: None,
        sandbox_allow_git_writes: false,
        app_server_clients_within_sandbox: false,
        sandbox_executable: None,
        unified_exec: None,
        shell_snapshot: true,
        exec_server_url: None,
        exec_server_auth_token_env: None,
        exec_server_auth_token_file: None,
        environment: None,
        exec_server_auth_token: None,
        model_auto_compact_token_limit: None,
        compact_prompt: None,
        tool_output_token_limit: 10_000,
        // The catalogue's default for gpt-6.2-sol.
        model_reasoning_summary: ReasoningSummaryMode::None,
        model_verbosity: None,
        model_supports_reasoning_summaries: None,
        web_search: false,
        switches: Default::default(),
        shell_tool: true,
        goals: true,
        checkpoints: true,
        update_plan_tool: true,
        request_user_input_tool: true,
        multi_agent: true,
        enable_fanout: true,
        agents_max_threads: 6,
        agents_max_depth: 1,
        mcp_servers: BTreeMap::new(),
        dynamic_tools: Vec::new(),
        warnings: Vec::new(),
        otel: OtelSettings::default(),
    }
}

#[test]
fn defaults_without_file() -> TestResult {
    let home = home_with(None)?;
    let config = load(home.path(), &[], ConfigOverrides::default())?;
    assert_eq!(config, default_config(home.path()));
    assert_eq!(config.config_file(), home.path().join("config.toml"));
    assert_eq!(config.model_provider.request_max_retries(), 4);
    assert_eq!(config.model_provider.stream_max_retries(), 5);
    assert_eq!(
        config.model_provider.stream_idle_timeout(),
        std::time::Duration::from_millis(300_000)
    );
    Ok(())
}

#[test]
fn empty_file_is_defaults() -> TestResult {
    let home = home_with(Some("# nothing yet\n"))?;
    let config = load(home.path(), &[], ConfigOverrides::default())?;
    assert_eq!(config, default_config(home.path()));
    Ok(())
}

const CODEX_FILE: &str = r#"
model = "o3"
model_provider = "azure"
approval_policy = "untrusted"
sandbox_mode = "workspace-write"
model_reasoning_effort = "high"
model_reasoning_summary = "detailed"
model_verbosity = "low"
hide_agent_reasoning = true               # Codex-only: ignored
notify = ["notify-send", "Codex"]         # Codex-only: ignored
developer_instructions = "Prefer small diffs."
project_doc_max_bytes = 65536
model_context_window = 200000
file_opener = "vscode"
exec_server_url = "ws://10.0.0.5:4500"
model_auto_compact_token_limit = 150000
compact_prompt = "Summarise tersely."
tool_output_token_limit = 2000
sqlite_home = "state"
model_supports_reasoning_summaries = true

[features]
unified_exec = false
enable_fanout = false
multi_agent = true

[agents]
max_threads = 64
max_depth = 2

[model_providers.azure]
name = "Azure"
base_url = "https://acme.openai.azure.com/openai"
env_key = "AZURE_OPENAI_API_KEY"
env_key_instructions = "Copy a key from the Azure portal."
wire_api = "responses"
query_params = { api-version = "2025-04-01-preview" }
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Trace" = "TRACE_ID" }
request_max_retries = 7
stream_max_retries = 200
stream_idle_timeout_ms = 60000
requires_openai_auth = false

[model_providers.local]
base_url = "http://127.0.0.1:8080/v1"

[sandbox_workspace_write]
writable_roots = ["/data", "scratch"]
network_access = true
exclude_slash_tmp = true

[shell_environment_policy]
inherit = "core"
ignore_default_excludes = true
exclude = ["AWS_*"]
set = { CI = "1" }
include_only = ["PATH", "HOME", "CI"]
experimental_use_profile = false          # Codex-only: ignored

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
startup_timeout_sec = 20
enabled_tools = ["search"]

[projects."/work/project"]
trust_level = "trusted"

[tui]
notifications = true

[history]
persistence = "save-all"
"#;

#[test]
fn full_codex_style_file() -> TestResult {
    let home = home_with(Some(CODEX_FILE))?;
    let config = load(home.path(), &[], ConfigOverrides::default())?;

    let azure = ModelProviderInfo {
        name: "Azure".to_string(),
        base_url: Some("https://acme.openai.azure.com/openai".to_string()),
        env_key: Some("AZURE_OPENAI_API_KEY".to_string()),
        env_key_instructions: Some("Copy a key from the Azure portal.".to_string()),
        wire_api: WireApi::Responses,
        query_params: BTreeMap::from([(
            "api-version".to_string(),
            "2025-04-01-preview".to_string(),
        )]),
        http_headers: BTreeMap::from([("X-Team".to_string(), "core".to_string())]),
        env_http_headers: BTreeMap::from([("X-Trace".to_string(), "TRACE_ID".to_string())]),
        request_max_retries: Some(7),
        stream_max_retries: Some(200),
        stream_idle_timeout_ms: Some(60_000),
        chat_reasoning_field: None,
        requires_openai_auth: false,
        stored_api_key: None,
    };
    let local = ModelProviderInfo {
        name: "local".to_string(),
        base_url: Some("http://127.0.0.1:8080/v1".to_string()),
        ..ModelProviderInfo::default()
    };
    let mut model_providers = built_in_model_providers(None);
    model_providers.insert("azure".to_string(), azure.clone());
    model_providers.insert("local".to_string(), local);

    let expected = Config {
        model: "o3".to_string(),
        model_provider_id: "azure".to_string(),
        model_provider: azure,
        model_providers,
        model_catalog: crate::model_catalog::ModelCatalog::builtin(),
        code_mode: true,
        approval_policy: AskForApproval::UnlessTrusted,
        sandbox_policy: SandboxPolicy::WorkspaceWrite {
            writable_roots: vec![
                PathBuf::from("/data"),
                PathBuf::from("/work/project/scratch"),
            ],
            network_access: true,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: true,
        },
        shell_environment_policy: ShellEnvironmentPolicy {
            inherit: ShellEnvironmentPolicyInherit::Core,
            ignore_default_excludes: true,
            exclude: vec!["AWS_*".to_string()],
            set: BTreeMap::from([("CI".to_string(), "1".to_string())]),
            include_only: vec!["PATH".to_string(), "HOME".to_string(), "CI".to_string()],
        },
        cwd: PathBuf::from("/work/project"),
        bypass_hook_trust: false,
        skill_switches: Vec::new(),
        extra_skill_roots: Vec::new(),
        service_tier: None,
        trusted_projects: vec![PathBuf::from("/work/project")],
        sqlite_home: home.path().join("state"),
        keel_home: home.path().to_path_buf(),
        active_profile: None,
        model_reasoning_effort: Some(ReasoningEffort::HIGH),
        base_instructions: None,
        developer_instructions: Some("Prefer small diffs.".to_string()),
        project_doc_max_bytes: 65_536,
        model_context_window: Some(200_000),
        sandbox_allow_git_writes: false,
        app_server_clients_within_sandbox: false,
        sandbox_executable: None,
        unified_exec: Some(false),
        shell_snapshot: true,
        exec_server_url: Some("ws://10.0.0.5:4500".to_string()),
        exec_server_auth_token_env: None,
        exec_server_auth_token_file: None,
        environment: None,
        exec_server_auth_token: None,
        model_auto_compact_token_limit: Some(150_000),
        compact_prompt: Some("Summarise tersely.".to_string()),
        tool_output_token_limit: 2_000,
        model_reasoning_summary: ReasoningSummaryMode::Detailed,
        model_verbosity: Some(Verbosity::Low),
        model_supports_reasoning_summaries: Some(true),
        web_search: false,
        switches: Default::default(),
        shell_tool: true,
        goals: true,
        checkpoints: true,
        update_plan_tool: true,
        request_user_input_tool: true,
        multi_agent: true,
        enable_fanout: false,
        agents_max_threads: 64,
        agents_max_depth: 2,
        dynamic_tools: Vec::new(),
        mcp_servers: BTreeMap::from([(
            "docs".to_string(),
            McpServerConfig {
                transport: McpServerTransport::Stdio {
                    command: "npx".to_string(),
                    args: vec!["-y".to_string(), "docs-mcp".to_string()],
                    env: BTreeMap::new(),
                    env_vars: Vec::new(),
                    cwd: None,
                },
                enabled: true,
                required: false,
                startup_timeout: Duration::from_secs(20),
                tool_timeout: DEFAULT_MCP_TOOL_TIMEOUT,
                enabled_tools: Some(vec!["search".to_string()]),
                disabled_tools: Vec::new(),
                // A stdio server never logs in, but every server knows where logins are kept.
                oauth: crate::config::McpOAuthSettings {
                    credentials_file: Some(home.path().join(crate::config::MCP_CREDENTIALS_FILE)),
                    ..Default::default()
                },
                plugin_id: None,
            },
        )]),
        warnings: Vec::new(),
        otel: OtelSettings::default(),
    };
    assert_eq!(config, expected);

    let provider = &config.model_provider;
    assert_eq!(
        provider.endpoint_url(),
        "https://acme.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
    );
    assert_eq!(provider.request_max_retries(), 7);
    assert_eq!(provider.stream_max_retries(), 100, "capped");
    assert_eq!(
        provider.headers(&|var| (var == "TRACE_ID").then(|| "t-1".to_string())),
        BTreeMap::from([
            ("X-Team".to_string(), "core".to_string()),
            ("X-Trace".to_string(), "t-1".to_string()),
        ])
    );
    assert_eq!(
        provider.api_key(&|_| None).unwrap_err().to_string(),
        "missing API key for model provider `Azure`: set the environment variable \
         `AZURE_OPENAI_API_KEY`. Copy a key from the Azure portal."
    );
    Ok(())
}

pub(super) const PROFILES_FILE: &str = r#"
model = "gpt-5-codex"
approval_policy = "on-request"
profile = "fast"

[profiles.fast]
model = "o4-mini"
model_reasoning_effort = "low"
approval_policy = "never"

[profiles.local]
model = "gpt-oss:20b"
model_provider = "ollama"
sandbox_mode = "danger-full-access"
base_instructions = "You are local."
"#;

#[test]
fn profile_from_file_wins_over_top_level() -> TestResult {
    let config = load_str(PROFILES_FILE, &[])?;
    assert_eq!(config.active_profile.as_deref(), Some("fast"));
    assert_eq!(config.model, "o4-mini");
    assert_eq!(config.model_reasoning_effort, Some(ReasoningEffort::LOW));
    assert_eq!(config.approval_policy, AskForApproval::Never);
    assert_eq!(config.model_provider_id, "openai");
    Ok(())
}

#[test]
fn sandbox_git_writes_and_helper() -> TestResult {
    let home = home_with(Some(
        "sandbox_mode = \"workspace-write\"\n[sandbox_workspace_write]\nallow_git_writes = true\n",
    ))?;
    let overrides = ConfigOverrides {
        sandbox_executable: Some(PathBuf::from("/opt/keel-linux-sandbox")),
        ..ConfigOverrides::default()
    };
    let config = load(home.path(), &[], overrides)?;
    assert!(config.sandbox_allow_git_writes);
    assert_eq!(
        config.sandbox_executable,
        Some(PathBuf::from("/opt/keel-linux-sandbox"))
    );
    Ok(())
}

#[test]
fn typed_profile_override_selects_another_profile() -> TestResult {
    let home = home_with(Some(PROFILES_FILE))?;
    let overrides = ConfigOverrides {
        config_profile: Some("local".to_string()),
        ..ConfigOverrides::default()
    };
    let config = load(home.path(), &[], overrides)?;
    assert_eq!(config.active_profile.as_deref(), Some("local"));
    assert_eq!(config.model, "gpt-oss:20b");
    assert_eq!(config.model_provider_id, "ollama");
    assert_eq!(config.model_provider.name, "Ollama");
    assert_eq!(config.sandbox_policy, SandboxPolicy::DangerFullAccess);
    assert_eq!(config.approval_policy, AskForApproval::OnRequest);
    assert_eq!(config.base_instructions.as_deref(), Some("You are local."));
    assert_eq!(config.model_reasoning_effort, None);
    Ok(())
}

#[test]
fn cli_overrides_select_and_edit_profiles() -> TestResult {
    let config = load_str(
        PROFILES_FILE,
        &["profile=local", "profiles.local.model=qwen3"],
    )?;
    assert_eq!(config.model, "qwen3");
    assert_eq!(config.model_provider_id, "ollama");
    Ok(())
}

#[test]
fn cli_overrides_nested_provider_fields_arrays_and_raw_strings() -> TestResult {
    let toml = r#"
model_provider = "mock"
sandbox_mode = "workspace-write"
[model_providers.mock]
name = "Mock"
base_url = "http://127.0.0.1:1/v1"
request_max_retries = 9
"#;
    let config = load_str(
        toml,
        &[
            "model=o3",
            "model_providers.mock.request_max_retries=2",
            "model_providers.mock.stream_idle_timeout_ms=1000",
            "model_providers.mock.query_params.api-version=2025-04-01",
            r#"sandbox_workspace_write.writable_roots=["/a"]"#,
            "sandbox_workspace_write.network_access=true",
            "approval_policy=never",
            "shell_environment_policy.inherit=none",
        ],
    )?;
    assert_eq!(config.model, "o3");
    assert_eq!(config.model_provider.name, "Mock");
    assert_eq!(config.model_provider.request_max_retries, Some(2));
    assert_eq!(
        config.model_provider.stream_idle_timeout(),
        std::time::Duration::from_secs(1)
    );
    assert_eq!(
        config.model_provider.endpoint_url(),
        "http://127.0.0.1:1/v1/responses?api-version=2025-04-01"
    );
    assert_eq!(
        config.sandbox_policy,
        SandboxPolicy::WorkspaceWrite {
            writable_roots: vec![PathBuf::from("/a")],
            network_access: true,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: false,
        }
    );
    assert_eq!(config.approval_policy, AskForApproval::Never);
    assert_eq!(
        config.shell_environment_policy.inherit,
        ShellEnvironmentPolicyInherit::None
    );
    Ok(())
}

#[test]
fn cli_override_can_define_a_whole_provider() -> TestResult {
    let config = load_str(
        "",
        &[
            "model_providers.mock.base_url=http://127.0.0.1:9/v1",
            "model_providers.mock.wire_api=responses",
            "model_provider=mock",
        ],
    )?;
    assert_eq!(config.model_provider.name, "mock");
    assert_eq!(
        config.model_provider.endpoint_url(),
        "http://127.0.0.1:9/v1/responses"
    );
    assert_eq!(config.model_provider.api_key(&|_| None)?, None);
    Ok(())
}

#[test]
fn typed_overrides_win_over_everything() -> TestResult {
    let home = home_with(Some(PROFILES_FILE))?;
    let overrides = ConfigOverrides {
        model: Some("typed-model".to_string()),
        model_provider: Some("ollama".to_string()),
        config_profile: None,
        cwd: Some(PathBuf::from("./sub/dir")),
        approval_policy: Some(AskForApproval::OnFailure),
        sandbox_mode: Some(SandboxMode::WorkspaceWrite),
        base_instructions: Some("typed base".to_string()),
        developer_instructions: Some("typed dev".to_string()),
        sandbox_executable: None,
    };
    let config = load(
        home.path(),
        &["model=cli-model", "approval_policy=untrusted"],
        overrides,
    )?;
    assert_eq!(config.model, "typed-model");
    assert_eq!(config.model_provider_id, "ollama");
    assert_eq!(config.cwd, PathBuf::from("/work/project/sub/dir"));
    assert_eq!(config.approval_policy, AskForApproval::OnFailure);
    assert_eq!(config.sandbox_policy, SandboxPolicy::new_workspace_write());
    assert_eq!(config.base_instructions.as_deref(), Some("typed base"));
    assert_eq!(config.developer_instructions.as_deref(), Some("typed dev"));
    // The profile selected by the file still supplies what no override sets.
    assert_eq!(config.model_reasoning_effort, Some(ReasoningEffort::LOW));
    Ok(())
}

#[test]
fn absolute_cwd_override_is_kept() -> TestResult {
    let home = home_with(None)?;
    let overrides = ConfigOverrides {
        cwd: Some(PathBuf::from("/elsewhere")),
        ..ConfigOverrides::default()
    };
    assert_eq!(
        load(home.path(), &[], overrides)?.cwd,
        PathBuf::from("/elsewhere")
    );
    Ok(())
}

#[test]
fn sandbox_table_ignored_unless_workspace_write() -> TestResult {
    let toml = "[sandbox_workspace_write]\nnetwork_access = true\n";
    assert_eq!(load_str(toml, &[])?.sandbox_policy, SandboxPolicy::ReadOnly);
    let config = load_str(toml, &["sandbox_mode=workspace-write"])?;
    assert_eq!(
        config.sandbox_policy,
        SandboxPolicy::WorkspaceWrite {
            writable_roots: Vec::new(),
            network_access: true,
            exclude_tmpdir_env_var: false,
            exclude_slash_tmp: false,
        }
    );
    Ok(())
}

#[test]
fn user_provider_replaces_built_in_and_openai_base_url_applies() -> TestResult {
    let env = ConfigEnv {
        openai_base_url: Some("http://proxy.local/v1".to_string()),
        ..test_env()
    };
    let home = Path::new("/home/u/.keel");
    let config =
        Config::load_from_toml_str("", home, Vec::new(), ConfigOverrides::default(), &env)?;
    assert_eq!(
        config.model_provider.endpoint_url(),
        "http://proxy.local/v1/responses"
    );

    let toml = "[model_providers.openai]\nname = \"My OpenAI\"\nbase_url = \"http://mine/v1\"\nwire_api = \"responses\"\n";
    let config =
        Config::load_from_toml_str(toml, home, Vec::new(), ConfigOverrides::default(), &env)?;
    assert_eq!(config.model_provider.name, "My OpenAI");
    assert_eq!(config.model_provider.env_key, None);
    assert_eq!(
        config.model_provider.endpoint_url(),
        "http://mine/v1/responses"
    );
    assert_eq!(config.model_providers["ollama"].name, "Ollama");
    Ok(())
}

#[test]
fn missing_openai_key_names_the_variable() -> TestResult {
    let config = load_str("", &[])?;
    let err = config.model_provider.api_key(&|_| None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "missing API key for model provider `OpenAI`: set the environment variable \
         `OPENAI_API_KEY`. Create an API key at https://platform.openai.com/api-keys and export it \
         (CODEX_API_KEY is read first)."
    );
    Ok(())
}

#[test]
fn keel_home_from_env_value_or_home_dir() -> TestResult {
    assert_eq!(
        find_keel_home(Some(OsStr::new("/srv/keel")))?,
        PathBuf::from("/srv/keel")
    );
    let relative = find_keel_home(Some(OsStr::new("rel/keel")))?;
    assert!(
        relative.is_absolute() && relative.ends_with("rel/keel"),
        "{relative:?}"
    );
    if let Some(home) = dirs::home_dir() {
        assert_eq!(find_keel_home(None)?, home.join(".keel"));
        assert_eq!(find_keel_home(Some(OsStr::new("")))?, home.join(".keel"));
    }
    Ok(())
}

#[test]
fn codex_tool_switches_turn_tools_off() -> TestResult {
    let config = load_str(
        "[features]\nshell_tool = false\nview_image = false\n\n\
         [tools.update_plan]\nenabled = false\n\n\
         [tools.experimental_request_user_input]\nenabled = false\n",
        &[],
    )?;
    assert!(!config.shell_tool && !config.switch("view_image", true));
    assert!(!config.update_plan_tool && !config.request_user_input_tool);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    // `tools.view_image` wins over the feature switch.
    let config = load_str(
        "[features]\nview_image = false\n[tools]\nview_image = true\n",
        &["tools.update_plan.enabled=true"],
    )?;
    assert!(config.switch("view_image", true) && config.update_plan_tool && config.shell_tool);
    Ok(())
}
