//! What a turn runs with and how it is named: the settings (replaced as a whole when the
//! client overrides them), the ids its events carry, and why it stopped. Defined below the
//! tools and the turn loop, so both can use them without importing each other.

use std::collections::BTreeMap;
use std::path::PathBuf;

use keel_protocol::{AskForApproval, SandboxPolicy, SubmissionId, TurnId};

use crate::client::ModelClient;
use crate::error::CoreError;

/// Everything a turn needs to know about how to run.
#[derive(Debug, Clone)]
pub(crate) struct TurnContext {
    pub cwd: PathBuf,
    /// Where the conversation's telemetry goes (`[otel]`); empty when nowhere.
    pub telemetry: crate::telemetry::Telemetry,
    pub approval_policy: AskForApproval,
    pub sandbox_policy: SandboxPolicy,
    /// The helper that confines commands; `None` when none was found (sandboxed commands
    /// then cannot run without the user's approval).
    pub sandbox_executable: Option<PathBuf>,
    /// Whether sandboxed commands may write the `.git` of writable roots.
    pub sandbox_allow_git_writes: bool,
    pub client: ModelClient,
    pub model_context_window: Option<u64>,
    pub base_instructions: String,
    pub developer_instructions: Option<String>,
    /// `AGENTS.md` project docs, already read.
    pub user_instructions: Option<String>,
    /// The most of them read (`project_doc_max_bytes`), for a remote environment's.
    pub project_doc_max_bytes: usize,
    /// Whether the working directory's project is trusted (its skills and hooks are used).
    pub project_trusted: bool,
    /// Where the conversation's processes run now, and the environment's name: sub-agents
    /// start there too.
    pub exec_target: crate::processes::ExecTarget,
    /// The environment's name (`environment`), if it has one.
    pub environment: Option<String>,
    /// The skills installed for this working directory.
    pub skills: std::sync::Arc<crate::skills::SkillInventory>,
    /// Where they are looked for (read again at each turn, to notice changes).
    pub skill_roots: Vec<crate::skills::SkillRoot>,
    /// The skills the configuration turned off or on, used when the user's config file
    /// cannot be read again.
    pub skill_switches: Vec<crate::skills::SkillSwitch>,
    /// Skill folders a client added (searched first), kept for when the folders are
    /// searched again.
    pub extra_skill_roots: Vec<std::path::PathBuf>,
    /// The hooks defined for this working directory.
    pub hooks: std::sync::Arc<crate::hooks::HookInventory>,
    /// Run hooks whatever their trust.
    pub bypass_hook_trust: bool,
    /// The user's config file (where trust records go).
    pub user_config_file: PathBuf,
    /// The model's name, as hooks are told.
    pub model: String,
    /// The environment commands run with.
    pub shell_env: BTreeMap<String, String>,
    /// Offer `exec_command`/`write_stdin` instead of `shell`.
    pub unified_exec: bool,
    /// Replay a captured login environment instead of running the login profile per command.
    pub shell_snapshot: bool,
    /// Compact the history once a response reports this many tokens; `None`: never
    /// automatically.
    pub auto_compact_token_limit: Option<u64>,
    /// Instructions for compaction summaries, instead of Keel's own.
    pub compact_prompt: Option<String>,
    /// The provider compacts the history itself (OpenAI's and Azure's Responses API, as
    /// Codex uses them): a compaction asks it, not the model, for the summary.
    pub remote_compaction: bool,
    /// Cap on each tool output sent to the model, in tokens.
    pub tool_output_token_limit: usize,
    pub request_max_retries: u64,
    pub stream_max_retries: u64,
    /// Which agent tools this conversation is offered.
    pub agent_tools: AgentTools,
    /// Offer the provider's built-in `web_search`.
    pub web_search: bool,
    /// The switches of built-ins that declare one ([`crate::Config::switches`]).
    pub switches: std::sync::Arc<BTreeMap<String, bool>>,
    /// Offer the command tools (`shell`, `exec_command`, `write_stdin`).
    pub shell_tool: bool,
    /// Offer `update_plan`.
    pub update_plan_tool: bool,
    /// Offer `request_user_input`.
    pub request_user_input_tool: bool,
    /// Offer the goal tools.
    pub goal_tools: bool,
    /// Drive models whose catalogue entry says so in code mode (`features.code_mode`).
    pub code_mode: bool,
    /// Plan mode: commands run read-only, `apply_patch` is not offered, and the mode's
    /// instructions lead each request.
    pub plan_mode: Option<PlanMode>,
    /// The agent's task path in its tree (`/root` for a client's conversation), told to the
    /// provider with each request and to the agents it talks to.
    pub agent_path: String,
    /// What starts this conversation's turns, told to the provider: `exec`, `user` or
    /// `subagent`.
    pub turn_trigger: &'static str,
    /// For a sub-agent: who spawned it, told to the provider.
    pub origin: Option<AgentOrigin>,
    /// Whether any MCP server is configured (the resource tools are offered then).
    pub mcp_configured: bool,
}

/// Where a sub-agent comes from, as its requests tell the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentOrigin {
    /// The conversation that spawned it.
    pub parent_thread: String,
    /// Its turn that did, when known.
    pub parent_turn: Option<String>,
    /// The tree's top-level conversation: the session the provider caches by.
    pub root_thread: String,
    /// The top-level conversation's turn that led here, when known.
    pub root_turn: Option<String>,
}

/// What plan mode keeps while it lasts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlanMode {
    /// The client's wording of the mode, if it gave one.
    pub instructions: Option<String>,
    /// The sandbox to go back to when plan mode ends.
    pub sandbox_after: SandboxPolicy,
}

impl TurnContext {
    /// Whether the switch `key` is on (`default` when the configuration does not set it).
    pub(crate) fn switch(&self, key: &str, default: bool) -> bool {
        self.switches.get(key).copied().unwrap_or(default)
    }

    /// The Keel home the configuration came from (where sessions, hook outputs and shell
    /// snapshots are kept).
    pub(crate) fn keel_home(&self) -> PathBuf {
        self.user_config_file
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default()
    }

    /// What this turn's hooks are told about the conversation `session_id` (recorded at
    /// `transcript_path`, if it is).
    pub(crate) fn hook_session(
        &self,
        session_id: String,
        transcript_path: Option<PathBuf>,
    ) -> crate::hooks::HookSession {
        let keel_home = self.keel_home();
        crate::hooks::HookSession {
            outputs_dir: keel_home.join("hook-outputs").join(&session_id),
            session_id,
            transcript_path,
            cwd: self.cwd.clone(),
            model: self.model.clone(),
            permission_mode: if self.approval_policy == AskForApproval::Never {
                "bypassPermissions"
            } else {
                "default"
            },
            bypass_trust: self.bypass_hook_trust,
        }
    }
}

/// The agent tools a conversation is offered, by its place in the agent tree.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AgentTools {
    /// `spawn_agent`, `send_input`, `wait_agent`, `close_agent`, `resume_agent`.
    pub collab: bool,
    /// `spawn_agents_on_csv`.
    pub fanout: bool,
    /// `report_agent_job_result` (job workers, who are not offered the goal tools).
    pub report: bool,
}

/// Why a turn stopped early.
#[derive(Debug)]
pub(crate) enum TurnStop {
    /// The user interrupted it, or answered an approval with `abort`.
    Interrupted,
    /// A non-recoverable error.
    Failed(CoreError),
}

/// What one turn needs to identify itself in events.
#[derive(Debug, Clone)]
pub(crate) struct TurnIds {
    pub sub_id: SubmissionId,
    pub turn_id: TurnId,
    /// The JSON Schema this turn's final answer must match, if the client set one.
    pub output_schema: Option<serde_json::Value>,
    /// When the turn started, in milliseconds since the Unix epoch (told to the provider).
    pub started_at_ms: i64,
    /// The turn's span and metrics (empty without telemetry).
    pub trace: crate::telemetry::TurnTrace,
}

impl TurnIds {
    /// The ids of a turn starting now for submission `sub_id`.
    pub(crate) fn starting(sub_id: SubmissionId, output_schema: Option<serde_json::Value>) -> Self {
        Self {
            turn_id: TurnId::new(sub_id.as_str()),
            sub_id,
            output_schema,
            started_at_ms: chrono::Utc::now().timestamp_millis(),
            trace: crate::telemetry::TurnTrace::default(),
        }
    }
}
