//! How a conversation's configuration and the embedder's model choices become the settings
//! its turns run with: the model client (an HTTP backend or the embedder's own), the policies,
//! the instructions and the tools it is offered.

use std::sync::Arc;

use crate::client::{ApiKeyFn, ClientSettings, ModelClient, ModelProvider};
use crate::config::Config;
use crate::prompt_context::{BASE_INSTRUCTIONS, read_project_docs};
use crate::skills::{load_skills, skill_roots, user_home};
use crate::turn_context::{AgentTools, TurnContext};

/// Looks up an environment variable; injectable so tests never touch the process env.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What an embedder set about the model: its own backend, or a source of API keys for
/// Keel's HTTP backends.
#[derive(Default, Clone)]
pub(crate) struct EmbedderModel {
    pub provider: Option<Arc<dyn ModelProvider>>,
    pub api_key: Option<ApiKeyFn>,
}

/// How a conversation's model client is made.
pub(crate) enum ModelBackend {
    /// Keel's HTTP backends on the shared pool, with the embedder's key source if any.
    Http(reqwest::Client, Option<ApiKeyFn>),
    /// The embedder's own backend.
    Provider(Arc<dyn ModelProvider>),
}

impl ModelBackend {
    fn client(self, settings: ClientSettings) -> ModelClient {
        match self {
            Self::Provider(provider) => ModelClient::with_provider(provider, settings),
            Self::Http(http, key) => {
                let provider = crate::client::ConfiguredHttpProvider::new(http, key);
                ModelClient::with_provider(Arc::new(provider), settings)
            }
        }
    }
}

/// Resolves configuration into the settings turns run with.
pub(crate) fn turn_context(config: &Config, env: &EnvLookup, backend: ModelBackend) -> TurnContext {
    let lookup = |name: &str| env(name);
    let provider = &config.model_provider;
    let http_backend = matches!(backend, ModelBackend::Http(..));
    let context_window = config.model_context_window.or_else(|| {
        crate::model_family::known_context_window(&config.model_catalog, &config.model)
    });
    let settings = ClientSettings {
        url: provider.endpoint_url(),
        wire_api: provider.wire_api,
        headers: provider.headers(&lookup).into_iter().collect(),
        api_key: provider.api_key(&lookup).map_err(|err| err.to_string()),
        model: config.model.clone(),
        reasoning_effort: config.model_reasoning_effort.clone(),
        reasoning_summary: config.model_reasoning_summary,
        verbosity: config.model_verbosity,
        service_tier: config.service_tier,
        chat_reasoning_field: provider.chat_reasoning_field_for(&config.model),
        reasoning_override: config.model_supports_reasoning_summaries,
        stream_idle_timeout: provider.stream_idle_timeout(),
        catalog: config.model_catalog.clone(),
    };
    let project_trusted = config.project_trusted(&config.cwd);
    // A remote environment's project files are not on this host: its project skills are read
    // there by each turn, and its project hooks are not loaded (they would run here).
    let here = config.exec_server_url.is_none();
    let roots = crate::skills::with_extra_roots(
        skill_roots(
            &config.keel_home,
            user_home().as_deref(),
            &config.cwd,
            project_trusted && here,
        ),
        &config.extra_skill_roots,
    );
    TurnContext {
        cwd: config.cwd.clone(),
        telemetry: crate::telemetry::Telemetry::default(),
        approval_policy: config.approval_policy,
        sandbox_policy: config.sandbox_policy.clone(),
        sandbox_executable: config
            .sandbox_executable
            .clone()
            .or_else(crate::sandbox::default_sandbox_executable),
        sandbox_allow_git_writes: config.sandbox_allow_git_writes,
        client: backend.client(settings),
        model_context_window: context_window,
        base_instructions: config
            .base_instructions
            .clone()
            .unwrap_or_else(|| BASE_INSTRUCTIONS.to_string()),
        developer_instructions: config.developer_instructions.clone(),
        // A remote environment's are read on its host, by the first turn.
        user_instructions: config
            .exec_server_url
            .is_none()
            .then(|| read_project_docs(&config.cwd, config.project_doc_max_bytes))
            .flatten(),
        project_doc_max_bytes: config.project_doc_max_bytes,
        project_trusted,
        exec_target: crate::processes::ExecTarget::for_config(config),
        environment: config.environment.clone(),
        hooks: Arc::new(crate::hooks::load_hooks(
            &config.keel_home,
            &config.cwd,
            project_trusted && here,
        )),
        bypass_hook_trust: config.bypass_hook_trust,
        user_config_file: config.config_file(),
        model: config.model.clone(),
        skills: Arc::new(load_skills(&roots).with_switches(&config.skill_switches)),
        skill_roots: roots,
        skill_switches: config.skill_switches.clone(),
        extra_skill_roots: config.extra_skill_roots.clone(),
        shell_env: config.shell_environment_policy.create_env_from_process(),
        unified_exec: config.unified_exec.unwrap_or(
            crate::model_family::family(&config.model_catalog, &config.model).unified_exec,
        ),
        shell_snapshot: config.shell_snapshot,
        auto_compact_token_limit: crate::model_family::auto_compact_limit(
            config.model_auto_compact_token_limit,
            context_window,
        ),
        compact_prompt: config.compact_prompt.clone(),
        remote_compaction: http_backend && provider.supports_remote_compaction(),
        tool_output_token_limit: config.tool_output_token_limit,
        request_max_retries: provider.request_max_retries(),
        stream_max_retries: provider.stream_max_retries(),
        agent_tools: AgentTools::default(),
        web_search: config.web_search,
        switches: std::sync::Arc::new(config.switches.clone()),
        shell_tool: config.shell_tool,
        update_plan_tool: config.update_plan_tool,
        request_user_input_tool: config.request_user_input_tool,
        goal_tools: config.goals,
        code_mode: config.code_mode,
        plan_mode: None,
        agent_path: crate::client::ROOT_AGENT.to_string(),
        turn_trigger: "user",
        origin: None,
        mcp_configured: config.mcp_servers.values().any(|server| server.enabled),
    }
}
