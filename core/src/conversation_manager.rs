//! Creates, finds, resumes and forks conversations. Each conversation runs on its own tasks;
//! one conversation's failure never affects another.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use keel_protocol::app_server::{SessionSource, SubAgentSource};
use keel_protocol::{ConversationId, SessionConfiguredEvent};
use tokio::sync::mpsc;

use crate::agents::{AgentControl, ConversationHost, Lineage};
use crate::config::Config;
use crate::conversation::{Conversation, NewConversation};
use crate::error::{CoreError, Result};
use crate::models::ResponseItem;
use crate::processes::ExecTarget;
use crate::rollout::{self, RolloutRecorder, RolloutSink, RolloutStore};
use crate::session::{Session, submission_loop};
use crate::tools::DynTool;
use crate::turn_context::AgentTools;
pub use crate::turn_setup::EnvLookup;
use crate::turn_setup::{EmbedderModel, ModelBackend, turn_context};

/// Submissions queued per conversation before `submit` waits (clients rarely queue more than
/// an approval or two).
const SUBMISSION_CAPACITY: usize = 64;
/// Events buffered per conversation before the engine waits for the client to read.
const EVENT_CAPACITY: usize = 1024;

/// What a resumed conversation carries over from its record.
#[derive(Default)]
struct Carried {
    /// Token usage so far, so the count goes on from it.
    token_info: Option<keel_protocol::TokenUsageInfo>,
    /// The thread's goal.
    goal: Option<keel_protocol::ThreadGoal>,
}

/// Whether and where a conversation is recorded.
enum Recording {
    /// A new rollout file.
    New,
    /// Continue this record (resume) or one already seeded (fork).
    Existing(Arc<dyn RolloutSink>),
    /// Not recorded (ephemeral).
    Off,
}

/// Owns every live conversation of an embedding program.
pub struct ConversationManager {
    shared: Arc<ManagerShared>,
}

/// What the manager and the agents its conversations spawn share.
pub(crate) struct ManagerShared {
    conversations: std::sync::RwLock<HashMap<ConversationId, Arc<Conversation>>>,
    env: EnvLookup,
    /// One HTTP client (and so one connection pool) for every conversation's model requests.
    http: std::sync::OnceLock<reqwest::Client>,
    /// Context windows servers reported, by endpoint and model (`None`: it did not say).
    context_windows: std::sync::Mutex<HashMap<(String, String), Option<u64>>>,
    /// External MCP servers, shared by conversations that configure them identically.
    mcp: crate::mcp::McpRegistry,
    /// Where conversations spawned by agents are announced, when the embedder listens.
    spawned: std::sync::Mutex<Option<mpsc::UnboundedSender<SpawnedConversation>>>,
    /// The embedder's own tools, offered to every conversation after the built-ins.
    tools: Arc<[Arc<dyn DynTool>]>,
    /// The embedder's model backend and key source, when it set them.
    model: EmbedderModel,
    /// The embedder's hooks, run in every conversation after the user's.
    hooks: Arc<[crate::hooks::EmbeddedHook]>,
    /// Where new conversations are recorded, when the embedder chose; else rollout files
    /// under each conversation's `keel_home`.
    store: Option<Arc<dyn RolloutStore>>,
    /// Recorded as the source of every conversation the embedder starts.
    session_source: SessionSource,
    /// The files and terminals of the program driving the conversations, where offered.
    client_backends: crate::ClientBackends,
    /// The telemetry exporters conversations configure (`[otel]`), built on first use.
    telemetry: crate::telemetry::TelemetryHub,
}

/// A conversation an agent spawned (a sub-agent or a job worker): the embedder shows it as
/// a thread of its own, reads its events and answers its approvals.
pub struct SpawnedConversation {
    /// The conversation, as a client would have started it.
    pub new: NewConversation,
    /// The configuration it runs with.
    pub config: Box<Config>,
    /// The conversation whose agent spawned it.
    pub parent_id: ConversationId,
    /// 1 for a child of a top-level conversation, 2 for a grandchild, ...
    pub depth: u32,
    /// Whether it is recorded (job workers are not).
    pub ephemeral: bool,
    /// Its task path in the agent tree (`/root/<task>`…).
    pub agent_path: String,
}

impl Default for ConversationManager {
    fn default() -> Self {
        Self::new()
    }
}

impl ConversationManager {
    /// A manager reading API keys from the process environment.
    pub fn new() -> Self {
        Self::with_env(Arc::new(|name: &str| std::env::var(name).ok()))
    }

    /// A manager reading API keys and headers through `env`.
    pub fn with_env(env: EnvLookup) -> Self {
        Self::from_parts(
            env,
            Arc::from(Vec::new()),
            EmbedderModel::default(),
            Arc::from(Vec::new()),
            None,
            SessionSource::Unknown,
            crate::ClientBackends::default(),
        )
    }

    pub(crate) fn from_parts(
        env: EnvLookup,
        tools: Arc<[Arc<dyn DynTool>]>,
        model: EmbedderModel,
        hooks: Arc<[crate::hooks::EmbeddedHook]>,
        store: Option<Arc<dyn RolloutStore>>,
        session_source: SessionSource,
        client_backends: crate::ClientBackends,
    ) -> Self {
        let manager = Self {
            shared: Arc::new(ManagerShared {
                conversations: std::sync::RwLock::new(HashMap::new()),
                env,
                http: std::sync::OnceLock::new(),
                context_windows: std::sync::Mutex::new(HashMap::new()),
                mcp: crate::mcp::McpRegistry::default(),
                spawned: std::sync::Mutex::new(None),
                tools,
                model,
                hooks,
                store,
                session_source,
                client_backends,
                telemetry: crate::telemetry::TelemetryHub::default(),
            }),
        };
        let shared = Arc::downgrade(&manager.shared);
        manager.observe_gauge(
            "keel.conversations.active",
            "Conversations the engine holds (loaded threads and their sub-agents)",
            move || {
                shared.upgrade().map_or(0, |shared| {
                    shared
                        .conversations
                        .read()
                        .map_or(0, |conversations| conversations.len() as u64)
                })
            },
        );
        manager
    }

    /// Builds the exporters `settings` name now rather than when the first conversation that
    /// configures them starts: a server's gauges are then exported before any thread runs.
    pub fn start_telemetry(&self, settings: &crate::config::OtelSettings) {
        self.shared.telemetry.start(settings);
    }

    /// Reports `read()` as the gauge `name` with every metrics export of conversations that
    /// configure `[otel] metrics_exporter` (a server's connections, a queue's depth). `read`
    /// runs on the exporter's thread and must not block for long.
    pub fn observe_gauge(
        &self,
        name: &'static str,
        description: &'static str,
        read: impl Fn() -> u64 + Send + Sync + 'static,
    ) {
        self.shared.telemetry.observe(crate::telemetry::Gauge {
            name,
            description,
            read: Arc::new(read),
        });
    }

    /// Sends the telemetry the exporters still hold and stops them (each within a few
    /// seconds). Call it before the program exits when `[otel]` is configured; conversations
    /// started afterwards build their exporters again.
    pub async fn shutdown_telemetry(&self) {
        self.shared.telemetry.shutdown().await;
    }

    /// Announces every conversation agents spawn from now on, so the embedder can show it
    /// and answer its approvals. Without a listener (or once the receiver is dropped) their
    /// events are read and dropped, and their approval requests are declined.
    pub fn subscribe_spawned(&self) -> mpsc::UnboundedReceiver<SpawnedConversation> {
        let (tx, rx) = mpsc::unbounded_channel();
        *lock(&self.shared.spawned) = Some(tx);
        rx
    }

    /// Works an agent job of `store` from this process (as `keel agent-job work` does): claims
    /// rows under leases and runs a worker agent with `config` on each, at most
    /// `options.concurrency` at once, until every row of the job has ended (whichever process
    /// worked it), `cancel` fires (this process's running rows go back to the queue), or a
    /// worker reports `stop: true`. `progress` hears the job's counts as they change.
    #[cfg(feature = "agent-jobs")]
    pub async fn work_agent_job(
        &self,
        config: Config,
        store: Arc<dyn crate::agent_jobs::JobStore>,
        job_id: &str,
        options: crate::agent_jobs::WorkOptions,
        cancel: tokio_util::sync::CancellationToken,
        progress: impl FnMut(&crate::agent_jobs::JobCounts) + Send,
    ) -> std::result::Result<crate::agent_jobs::WorkSummary, crate::agent_jobs::JobError> {
        let host = Arc::new(crate::agents::ManagerWorkers::new(self.shared.clone()));
        crate::agent_jobs::work_job(host, config, store, job_id, options, cancel, progress).await
    }

    /// Starts a new conversation recorded under `config.keel_home`.
    pub async fn new_conversation(&self, config: Config) -> Result<NewConversation> {
        let lineage = Lineage::root(&config);
        self.shared
            .spawn(
                config,
                ConversationId::new(),
                Vec::new(),
                Carried::default(),
                Recording::New,
                lineage,
            )
            .await
    }

    /// Starts a conversation that is not recorded on disk (it cannot be resumed or listed).
    pub async fn new_ephemeral_conversation(&self, config: Config) -> Result<NewConversation> {
        let lineage = Lineage::root(&config);
        self.shared
            .spawn(
                config,
                ConversationId::new(),
                Vec::new(),
                Carried::default(),
                Recording::Off,
                lineage,
            )
            .await
    }

    /// Continues a recorded conversation: same id, history rebuilt from the file, new items
    /// appended to the same file.
    pub async fn resume_conversation(
        &self,
        config: Config,
        rollout_path: &Path,
    ) -> Result<NewConversation> {
        let lineage = Lineage::root(&config);
        self.shared
            .resume_recorded(config, rollout_path, lineage)
            .await
    }

    /// Continues the conversation `id` from the manager's rollout store (the rollout files
    /// under `config.keel_home` unless the builder set another store): its history rebuilt
    /// from what was recorded, new items added to the same record.
    pub async fn resume_conversation_by_id(
        &self,
        config: Config,
        id: ConversationId,
    ) -> Result<NewConversation> {
        let lineage = Lineage::root(&config);
        self.shared.resume_stored(config, id, lineage).await
    }

    /// [`Self::resume_conversation`] for a client that builds its own view of a long thread:
    /// the transcript is not collected into `initial_messages` but handed to `step` entry by
    /// entry while the file is read (once). A turn the file left open ends in the view as the
    /// client decides (the repair recorded for it is not replayed to `step`).
    pub async fn resume_conversation_folding<S: Send + 'static>(
        &self,
        config: Config,
        rollout_path: &Path,
        state: S,
        step: impl FnMut(&mut S, rollout::TranscriptEntry) + Send + 'static,
    ) -> Result<(NewConversation, S)> {
        let (loaded, state) =
            rollout::load_rollout_streaming(rollout_path, turn_boundaries, state, step).await?;
        let lineage = Lineage::root(&config);
        let recorder: Arc<dyn RolloutSink> =
            Arc::new(RolloutRecorder::open_append(rollout_path).await?);
        let mut new = self
            .shared
            .resume_loaded(config, recorder, loaded, lineage)
            .await?;
        new.session_configured.initial_messages = None;
        Ok((new, state))
    }

    /// Starts a new conversation (new id, new file) with a copy of a recorded one's history.
    /// Work the recorded one left unfinished is closed first, as on resume.
    pub async fn fork_conversation(
        &self,
        config: Config,
        rollout_path: &Path,
    ) -> Result<NewConversation> {
        self.fork_conversation_with(config, rollout_path, false)
            .await
    }

    /// [`Self::fork_conversation`], or, when `ephemeral`, a copy that is never recorded (a
    /// side conversation: it has the history, and leaves no trace).
    pub async fn fork_conversation_with(
        &self,
        config: Config,
        rollout_path: &Path,
        ephemeral: bool,
    ) -> Result<NewConversation> {
        let loaded = rollout::load_rollout(rollout_path).await?;
        self.fork_loaded(config, loaded, ephemeral).await
    }

    /// [`Self::fork_conversation_with`] for conversation `id` of the manager's rollout store
    /// (the rollout files under `config.keel_home` unless the builder set another store).
    pub async fn fork_conversation_by_id(
        &self,
        config: Config,
        id: ConversationId,
        ephemeral: bool,
    ) -> Result<NewConversation> {
        let items = self
            .shared
            .store_for(&config)
            .load(id)
            .await?
            .ok_or(CoreError::ConversationNotFound(id))?;
        let loaded = rollout::fold_items(items, rollout::stored_source(id))?;
        self.fork_loaded(config, loaded, ephemeral).await
    }

    /// What conversation `id` recorded in the manager's rollout store, read back without
    /// running it (a thread shown, not resumed); `None` when the store does not hold it.
    pub async fn read_conversation_by_id(
        &self,
        config: &Config,
        id: ConversationId,
    ) -> Result<Option<rollout::LoadedRollout>> {
        let Some(items) = self.shared.store_for(config).load(id).await? else {
            return Ok(None);
        };
        rollout::fold_items(items, rollout::stored_source(id)).map(Some)
    }

    async fn fork_loaded(
        &self,
        mut config: Config,
        mut loaded: rollout::LoadedRollout,
        ephemeral: bool,
    ) -> Result<NewConversation> {
        close_interrupted_work(&mut loaded.history, &mut loaded.events, false);
        if config.dynamic_tools.is_empty() {
            config.dynamic_tools = loaded.meta.dynamic_tools.clone();
        }
        if ephemeral {
            let lineage = Lineage::root(&config);
            let mut new = self
                .shared
                .spawn(
                    config,
                    ConversationId::new(),
                    loaded.history,
                    Carried::default(),
                    Recording::Off,
                    lineage,
                )
                .await?;
            new.session_configured.initial_messages = Some(loaded.events);
            return Ok(new);
        }
        let id = ConversationId::new();
        // A fork of a spawned thread stays under the same parent; any other fork is the
        // embedder's own.
        let source = match &loaded.meta.source {
            Some(source @ SessionSource::SubAgent(_)) => source.clone(),
            _ => self.shared.session_source.clone(),
        };
        let meta = rollout::recorder_meta(id, &config, Some(loaded.meta.id), source);
        let recorder = self.shared.create_record(&config, meta).await?;
        let items: Vec<rollout::RolloutItem> = loaded
            .history
            .iter()
            .cloned()
            .map(rollout::RolloutItem::ResponseItem)
            .chain(
                loaded
                    .events
                    .iter()
                    .cloned()
                    .map(rollout::RolloutItem::EventMsg),
            )
            .collect();
        recorder.record(&items).await?;
        let lineage = Lineage::root(&config);
        let mut new = self
            .shared
            .spawn(
                config,
                id,
                loaded.history,
                // A fork's usage starts from zero, and it does not take the goal (as in Codex).
                Carried::default(),
                Recording::Existing(recorder),
                lineage,
            )
            .await?;
        new.session_configured.initial_messages = Some(loaded.events);
        Ok(new)
    }

    /// Gives every loaded conversation the MCP servers `config` names, from its next model
    /// request on (`config/mcpServer/reload`): added servers start then, removed ones stop
    /// once no running call holds them, changed ones restart. Returns how many conversations
    /// were given them.
    pub fn reload_mcp_servers(&self, config: &Config) -> usize {
        let conversations: Vec<Arc<Conversation>> =
            read(&self.shared.conversations).values().cloned().collect();
        for conversation in &conversations {
            conversation.replace_mcp_servers(crate::mcp::McpServers::start(
                &self.shared.mcp,
                &config.mcp_servers,
                self.shared.http(),
            ));
        }
        conversations.len()
    }

    /// The live conversation with this id.
    pub async fn get_conversation(&self, id: ConversationId) -> Result<Arc<Conversation>> {
        self.shared
            .get(id)
            .ok_or(CoreError::ConversationNotFound(id))
    }

    /// Forgets a conversation; it shuts down once the last handle is dropped.
    pub async fn remove_conversation(&self, id: ConversationId) -> Option<Arc<Conversation>> {
        self.shared.remove(id)
    }

    /// The state and tools of each MCP server `config` names, starting those not running
    /// (each bounded by its `startup_timeout_sec`).
    #[cfg(feature = "mcp")]
    pub async fn mcp_server_states(&self, config: &Config) -> Vec<crate::McpServerState> {
        crate::mcp::server_states(&self.shared.mcp, &config.mcp_servers, &self.shared.http()).await
    }

    /// Reads resource `uri` of MCP server `server` of `config` (starting the server if it is
    /// not running): its `{"contents": [...]}`, or why it could not be read.
    #[cfg(feature = "mcp")]
    pub async fn read_mcp_resource(
        &self,
        config: &Config,
        server: &str,
        uri: &str,
    ) -> std::result::Result<serde_json::Value, String> {
        crate::mcp::read_resource(
            &self.shared.mcp,
            &config.mcp_servers,
            &self.shared.http(),
            server,
            uri,
        )
        .await
    }

    /// Calls `tool` of MCP server `server` of `config` for a client (starting the server if
    /// it is not running; what the server asks meanwhile is declined): its result as JSON,
    /// or why the call failed.
    #[cfg(feature = "mcp")]
    pub async fn call_mcp_tool(
        &self,
        config: &Config,
        server: &str,
        tool: &str,
        arguments: Option<serde_json::Value>,
    ) -> std::result::Result<serde_json::Value, String> {
        crate::mcp::call_tool(
            &self.shared.mcp,
            &config.mcp_servers,
            &self.shared.http(),
            server,
            tool,
            arguments,
        )
        .await
    }

    /// Ids of every live conversation.
    pub async fn conversation_ids(&self) -> Vec<ConversationId> {
        read(&self.shared.conversations).keys().copied().collect()
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ConversationHost for ManagerShared {
    fn get(&self, id: ConversationId) -> Option<Arc<Conversation>> {
        read(&self.conversations).get(&id).cloned()
    }

    fn remove(&self, id: ConversationId) -> Option<Arc<Conversation>> {
        write(&self.conversations).remove(&id)
    }

    fn spawn_child(
        self: Arc<Self>,
        config: Config,
        history: Vec<ResponseItem>,
        ephemeral: bool,
        lineage: Lineage,
    ) -> BoxFuture<'static, Result<NewConversation>> {
        Box::pin(async move {
            self.spawn_child_conversation(config, history, ephemeral, lineage)
                .await
        })
    }

    fn resume_conversation<'a>(
        self: Arc<Self>,
        config: Config,
        id: ConversationId,
        known_file: Option<&'a Path>,
        lineage: Lineage,
    ) -> BoxFuture<'a, Result<Option<NewConversation>>> {
        Box::pin(async move {
            // An embedder's store holds the records; files are found where they were seen,
            // else looked up.
            if self.store.is_some() {
                return match self.resume_stored(config, id, lineage).await {
                    Err(CoreError::ConversationNotFound(_)) => Ok(None),
                    other => other.map(Some),
                };
            }
            let path = match known_file {
                Some(path) => path.to_path_buf(),
                None => match rollout::find_rollout_path(&config.keel_home, id).await? {
                    Some(path) => path,
                    None => return Ok(None),
                },
            };
            self.resume_recorded(config, &path, lineage).await.map(Some)
        })
    }
}

impl ManagerShared {
    /// The HTTP client every conversation's model requests share.
    fn http(&self) -> reqwest::Client {
        self.http.get_or_init(crate::client::http_client).clone()
    }

    /// The embedder's tools plus the client's own (`Config::dynamic_tools`), checked: a
    /// client's tool may not take a name already in use.
    fn tools_with(
        &self,
        specs: &[keel_protocol::DynamicToolSpec],
    ) -> Result<Arc<[Arc<dyn DynTool>]>> {
        if specs.is_empty() {
            return Ok(self.tools.clone());
        }
        let client = crate::tools::dynamic_tools(specs)?;
        if let Some(taken) = client
            .iter()
            .find(|tool| self.tools.iter().any(|own| own.name() == tool.name()))
        {
            return Err(
                crate::tools::ToolRegistrationError::Duplicate(taken.name().to_string()).into(),
            );
        }
        Ok(self.tools.iter().cloned().chain(client).collect())
    }

    /// Where this manager's conversations get their model client from.
    /// Fills in the model's context window from its server when neither the config nor
    /// Keel's model table knows it (not for OpenAI, whose models the table covers, nor an
    /// embedder's own backend). Asked once per endpoint and model.
    async fn with_discovered_context_window(&self, mut config: Config) -> Config {
        let unknown = config.model_context_window.is_none()
            && crate::model_family::known_context_window(&config.model_catalog, &config.model)
                .is_none();
        if !unknown || config.model_provider.requires_openai_auth || self.model.provider.is_some() {
            return config;
        }
        let key = (
            config.model_provider.base_url().to_string(),
            config.model.clone(),
        );
        let cached = self
            .context_windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .copied();
        let window = match cached {
            Some(window) => window,
            None => {
                let (api_key, headers) = {
                    let env = |name: &str| (self.env)(name);
                    (
                        config.model_provider.api_key(&env).ok().flatten(),
                        config.model_provider.headers(&env),
                    )
                };
                let window = crate::context_window::discover_context_window(
                    &self.http(),
                    &config.model_provider_id,
                    &config.model_provider,
                    &config.model,
                    api_key,
                    headers,
                )
                .await;
                tracing::debug!(model = %config.model, ?window, "context window asked of the server");
                self.context_windows
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key, window);
                window
            }
        };
        config.model_context_window = window;
        config
    }

    fn model_backend(&self) -> ModelBackend {
        match &self.model.provider {
            Some(provider) => ModelBackend::Provider(provider.clone()),
            None => ModelBackend::Http(self.http(), self.model.api_key.clone()),
        }
    }

    /// Resumes a recorded conversation with the lineage it gets in this process.
    async fn resume_recorded(
        self: &Arc<Self>,
        config: Config,
        rollout_path: &Path,
        lineage: Lineage,
    ) -> Result<NewConversation> {
        let (loaded, ()) =
            rollout::load_rollout_streaming(rollout_path, |_| true, (), |(), _| {}).await?;
        let recorder: Arc<dyn RolloutSink> =
            Arc::new(RolloutRecorder::open_append(rollout_path).await?);
        self.resume_loaded(config, recorder, loaded, lineage).await
    }

    /// Who starts a conversation with `lineage`: the agent that spawned it, or the embedder.
    fn source_of(&self, lineage: &Lineage) -> SessionSource {
        match lineage.parent {
            Some(parent) => SessionSource::SubAgent(Box::new(SubAgentSource::ThreadSpawn {
                parent_thread_id: parent.to_string(),
                depth: i32::try_from(lineage.depth).unwrap_or(i32::MAX),
                agent_nickname: None,
                agent_path: Some(lineage.path.clone()),
                agent_role: None,
            })),
            None => self.session_source.clone(),
        }
    }

    /// The store conversations started with `config` are recorded in.
    fn store_for(&self, config: &Config) -> Arc<dyn RolloutStore> {
        self.store
            .clone()
            .unwrap_or_else(|| Arc::new(rollout::FileRolloutStore::new(config.keel_home.clone())))
    }

    /// Starts the record of a new conversation.
    async fn create_record(
        &self,
        config: &Config,
        meta: rollout::SessionMeta,
    ) -> Result<Arc<dyn RolloutSink>> {
        self.store_for(config).create(meta).await
    }

    /// Resumes the conversation `id` from the store.
    async fn resume_stored(
        self: &Arc<Self>,
        config: Config,
        id: ConversationId,
        lineage: Lineage,
    ) -> Result<NewConversation> {
        let store = self.store_for(&config);
        // Opened first: a store shared by several processes may wait there for another's
        // turn to end, and what is read afterwards includes it.
        let recorder = store
            .open(id)
            .await?
            .ok_or(CoreError::ConversationNotFound(id))?;
        let items = store
            .load(id)
            .await?
            .ok_or(CoreError::ConversationNotFound(id))?;
        let loaded = rollout::fold_items(items, rollout::stored_source(id))?;
        self.resume_loaded(config, recorder, loaded, lineage).await
    }

    async fn resume_loaded(
        self: &Arc<Self>,
        mut config: Config,
        recorder: Arc<dyn RolloutSink>,
        mut loaded: rollout::LoadedRollout,
        lineage: Lineage,
    ) -> Result<NewConversation> {
        // The client's own tools come back with the conversation, unless the caller gives
        // others.
        if config.dynamic_tools.is_empty() {
            config.dynamic_tools = std::mem::take(&mut loaded.meta.dynamic_tools);
        }
        let repairs = close_interrupted_work(&mut loaded.history, &mut loaded.events, true);
        recorder.record(&repairs).await?;
        let mut new = self
            .spawn(
                config,
                loaded.meta.id,
                loaded.history,
                Carried {
                    token_info: loaded.token_info,
                    goal: loaded.goal,
                },
                Recording::Existing(recorder),
                lineage,
            )
            .await?;
        new.session_configured.initial_messages = Some(loaded.events);
        Ok(new)
    }

    /// Starts a conversation an agent asked for, and announces it.
    async fn spawn_child_conversation(
        self: &Arc<Self>,
        config: Config,
        history: Vec<ResponseItem>,
        ephemeral: bool,
        lineage: Lineage,
    ) -> Result<NewConversation> {
        let recording = if ephemeral {
            Recording::Off
        } else {
            Recording::New
        };
        self.spawn(
            config,
            ConversationId::new(),
            history,
            Carried::default(),
            recording,
            lineage,
        )
        .await
    }

    async fn spawn(
        self: &Arc<Self>,
        config: Config,
        id: ConversationId,
        history: Vec<ResponseItem>,
        carried: Carried,
        recording: Recording,
        lineage: Lineage,
    ) -> Result<NewConversation> {
        let Carried { token_info, goal } = carried;
        let tools = self.tools_with(&config.dynamic_tools)?;
        let ephemeral = matches!(recording, Recording::Off);
        let recorder = match recording {
            Recording::Existing(recorder) => Some(recorder),
            Recording::New => {
                let meta = rollout::recorder_meta(id, &config, None, self.source_of(&lineage));
                Some(self.create_record(&config, meta).await?)
            }
            Recording::Off => None,
        };
        let rollout_path = recorder
            .as_ref()
            .and_then(|r| r.path().map(Path::to_path_buf));
        tracing::debug!(
            conversation = %id,
            prompt_version = crate::prompt_context::BASE_INSTRUCTIONS_VERSION,
            own_instructions = config.base_instructions.is_some(),
            "starting conversation"
        );
        let config = self.with_discovered_context_window(config).await;
        let mut context = turn_context(&config, &self.env, self.model_backend());
        if !self.hooks.is_empty() {
            context.hooks = Arc::new((*context.hooks).clone().with_embedded(&self.hooks));
        }
        let may_spawn = lineage.depth < config.agents_max_depth && lineage.worker.is_none();
        context.telemetry = self.telemetry.conversation(&config.otel, || {
            crate::telemetry::ConversationFacts::of(&config, id, &self.source_of(&lineage))
        });
        context.agent_path = lineage.path.clone();
        context.origin = lineage
            .parent
            .map(|parent| crate::turn_context::AgentOrigin {
                parent_thread: parent.to_string(),
                parent_turn: lineage.parent_turn.clone(),
                root_thread: lineage.root.unwrap_or(parent).to_string(),
                root_turn: lineage.root_turn.clone(),
            });
        context.turn_trigger = match self.source_of(&lineage) {
            SessionSource::SubAgent(_) => "subagent",
            SessionSource::Exec => "exec",
            _ => "user",
        };
        context.agent_tools = AgentTools {
            collab: config.multi_agent && may_spawn,
            fanout: cfg!(feature = "agent-jobs") && config.enable_fanout && may_spawn,
            report: lineage.worker.is_some(),
        };
        let session_configured = SessionConfiguredEvent {
            session_id: id,
            model: config.model.clone(),
            model_provider_id: config.model_provider_id.clone(),
            approval_policy: config.approval_policy,
            sandbox_policy: config.sandbox_policy.clone(),
            cwd: config.cwd.clone(),
            reasoning_effort: config.model_reasoning_effort.clone(),
            history_log_id: 0,
            history_entry_count: 0,
            initial_messages: None,
            rollout_path: rollout_path.clone(),
        };
        let (tx_sub, rx_sub) = mpsc::channel(SUBMISSION_CAPACITY);
        let (tx_event, rx_event) = mpsc::channel(EVENT_CAPACITY);
        let exec_target = ExecTarget::for_config(&config);
        let environment_switch = Arc::new(crate::conversation::EnvironmentSwitch::default());
        let environment_link = Arc::new(tokio::sync::watch::Sender::new(
            crate::EnvironmentLink::NotConnected,
        ));
        let status = Arc::new(tokio::sync::watch::Sender::new(
            keel_protocol::CollabAgentState::new(keel_protocol::CollabAgentStatus::PendingInit),
        ));
        let parent = lineage.parent;
        let depth = lineage.depth;
        let agent_path = lineage.path.clone();
        let host: Arc<dyn ConversationHost> = self.clone();
        let agents = AgentControl::new(
            Arc::downgrade(&host),
            config.clone(),
            id,
            lineage,
            status.clone(),
        );
        // Checkpoints copy this host's files: a remote environment's are not here.
        let keeps_checkpoints =
            config.checkpoints && recorder.is_some() && config.exec_server_url.is_none();
        let mcp = crate::mcp_slot::McpSlot::new(crate::mcp::McpServers::start(
            &self.mcp,
            &config.mcp_servers,
            self.http(),
        ));
        let record = recorder.clone();
        let mut session = Session::new(
            id,
            context,
            history,
            recorder,
            tx_event,
            crate::session::SessionLinks {
                exec_target,
                environment_link: environment_link.clone(),
                environment_switch: environment_switch.clone(),
                agents,
                mcp: Arc::clone(&mcp),
                tools,
                client_backends: self.client_backends.clone(),
            },
        );
        if keeps_checkpoints {
            session = session.with_checkpoints(crate::checkpoints::checkpoint_dir(
                &config.keel_home,
                &id.to_string(),
            ));
        }
        let session = Arc::new(session);
        if let Some(info) = token_info {
            session.restore_token_info(info);
        }
        session.goals().restore(goal);
        if !session.mcp().is_empty() {
            // Report start-up as it happens, not only when the first turn waits for it.
            let reporter = session.clone();
            tokio::spawn(async move {
                reporter.mcp_catalog().await;
            });
        }
        let terminals = session.unified_exec_shared();
        let goals = session.goals_shared();
        tokio::spawn(submission_loop(session, rx_sub));
        let conversation = Arc::new(Conversation::new(
            id,
            tx_sub,
            rx_event,
            rollout_path,
            status,
            crate::conversation::SharedWithEngine {
                terminals,
                goals,
                environment: environment_link.subscribe(),
                environment_switch,
                mcp,
                record,
            },
        ));
        write(&self.conversations).insert(id, conversation.clone());
        let new = NewConversation {
            conversation_id: id,
            conversation,
            session_configured,
            dynamic_tools: config.dynamic_tools.clone(),
        };
        if let Some(parent_id) = parent {
            self.announce(SpawnedConversation {
                new: NewConversation {
                    conversation_id: new.conversation_id,
                    conversation: new.conversation.clone(),
                    session_configured: new.session_configured.clone(),
                    dynamic_tools: Vec::new(),
                },
                config: Box::new(config),
                parent_id,
                depth,
                ephemeral,
                agent_path,
            });
        }
        Ok(new)
    }

    /// Hands a spawned conversation to the embedder's listener, or, with none, reads its
    /// events itself so it never stalls on a full event queue.
    fn announce(&self, spawned: SpawnedConversation) {
        let unheard = match lock(&self.spawned).as_ref() {
            Some(tx) => tx.send(spawned).err().map(|err| err.0),
            None => Some(spawned),
        };
        if let Some(spawned) = unheard {
            tokio::spawn(crate::agents::drain_unobserved(spawned.new.conversation));
        }
    }
}

/// What a conversation stopped mid-turn (its process killed, say) left open: tool calls
/// without outputs and a turn without an end. Closes both in `history` and `events` and
/// returns the closing items, to record so the file says the same.
/// The events that say where turns start and end: all a resume needs to close an
/// interrupted turn and to apply rollbacks.
fn turn_boundaries(msg: &keel_protocol::EventMsg) -> bool {
    use keel_protocol::EventMsg;
    matches!(
        msg,
        EventMsg::TaskStarted(_)
            | EventMsg::TaskComplete(_)
            | EventMsg::TurnAborted(_)
            | EventMsg::Error(_)
            | EventMsg::UserMessage(_)
    )
}

fn close_interrupted_work(
    history: &mut Vec<ResponseItem>,
    events: &mut Vec<keel_protocol::EventMsg>,
    tell_model: bool,
) -> Vec<rollout::RolloutItem> {
    use keel_protocol::EventMsg;
    let outputs = crate::models::outputs_for_unanswered_calls(
        history,
        "aborted: the session ended before this call completed",
    );
    history.extend(outputs.iter().cloned());
    let mut repairs: Vec<rollout::RolloutItem> = outputs
        .into_iter()
        .map(rollout::RolloutItem::ResponseItem)
        .collect();
    // The last turn edge: a start leaves that turn open.
    let open_turn = events.iter().rev().find_map(|msg| match msg {
        EventMsg::TaskStarted(started) => Some(Some(started.turn_id.clone())),
        other => rollout::turn_edge(other).map(|_| None),
    });
    if let Some(Some(turn_id)) = open_turn {
        let aborted = EventMsg::TurnAborted(keel_protocol::TurnAbortedEvent {
            turn_id: Some(turn_id),
            reason: keel_protocol::TurnAbortReason::Interrupted,
            // When it really stopped is not known: the process ended mid-turn.
            completed_at: None,
            duration_ms: None,
        });
        events.push(aborted.clone());
        repairs.push(rollout::RolloutItem::EventMsg(aborted));
        // On resume the model is told, so it does not assume the work it started is still
        // running (a fork of a thread mid-turn copies it while that turn goes on elsewhere).
        if tell_model {
            let notice = ResponseItem::developer_text(INTERRUPTED_TURN_NOTICE);
            history.push(notice.clone());
            repairs.push(rollout::RolloutItem::ResponseItem(notice));
        }
    }
    repairs
}

/// What the model reads after a turn its process never finished (a crash, a restart, another
/// server taking the thread over).
const INTERRUPTED_TURN_NOTICE: &str = "<turn_aborted>\nThe previous turn did not finish: the \
     process running it stopped. Whatever it had running is gone (commands and their sessions, \
     background terminals, MCP connections); check the workspace for what they left before \
     relying on it.\n</turn_aborted>";
