//! State shared by every connection: the engine, the loaded threads, and how configuration
//! is resolved for new threads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_core::{
    Config, ConfigEnv, ConfigOverrides, ConversationManager, NewConversation, SpawnedConversation,
};
use keel_protocol::ConversationId;
use keel_protocol::app_server::{
    PERMISSION_PROFILES, SandboxPolicyV2, ServerNotification, SessionSource, SubAgentSource,
    ThreadOverrides, ThreadSettings, ThreadStartedNotification, Turn,
};
use tokio::sync::Mutex;

use crate::error::{AppServerError, Result};
use crate::outgoing::Outgoing;
use crate::threads::{LoadedThread, ThreadMeta};

/// What a thread's record says of it, for a thread loaded from one (resumed or forked).
pub(crate) struct RecordedMeta {
    /// Its first user message.
    pub preview: String,
    /// The name a person gave it.
    pub name: Option<String>,
    /// When it was created (Unix seconds).
    pub created_at: i64,
    /// Who started it.
    pub source: SessionSource,
}

/// How the server resolves configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The Keel home (`config.toml`, `sessions/`).
    pub keel_home: PathBuf,
    /// `-c key=value` overrides given on the command line.
    pub cli_overrides: Vec<(String, toml::Value)>,
    /// The directory relative paths resolve against, and the default cwd.
    pub cwd: PathBuf,
    /// Recorded as the source of the threads clients start (Codex's app-server records
    /// `vscode`, `exec` records `exec`), which `thread/list` filters on.
    pub session_source: SessionSource,
    /// Whether a loaded thread runs its queued messages (`thread/queue/*`) when idle: on for
    /// a server, off for `keel exec`, whose own turn is the one it came for.
    pub deliver_queued_messages: bool,
    /// The files and terminals of the program embedding the server (an editor), used for
    /// its threads' patches and one-shot commands where it offers them; none by default.
    pub client_backends: keel_core::ClientBackends,
    /// Where threads are recorded and browsed: files under the Keel home by default.
    pub threads: crate::ThreadBackend,
}

/// Shared by all connections.
pub(crate) struct AppState {
    pub config: ServerConfig,
    pub manager: ConversationManager,
    pub threads: Mutex<HashMap<ConversationId, Arc<LoadedThread>>>,
    /// Held while `config.toml` is rewritten.
    config_writes: std::sync::Mutex<()>,
    /// Which threads a person has seen.
    pub read_states: Arc<crate::read_state::ReadStates>,
    /// The recorded threads behind `thread/list`, `thread/search` and lookups by id (the
    /// rollouts under the Keel home, through the thread index when it can be used, unless
    /// the server shares a store).
    pub(crate) catalog: Arc<dyn keel_core::ThreadCatalog>,
    /// The rollout files' catalog, when threads are files (some requests read the files).
    files: Option<Arc<keel_core::FileThreadCatalog>>,
    /// One resume of a thread at a time.
    pub(crate) resumes: crate::resume_locks::ResumeLocks,
    /// Set once the server is stopping: it serves its connections but is not ready for more.
    draining: std::sync::atomic::AtomicBool,
    /// Environments clients added (`environment/add`).
    pub(crate) environments: crate::handlers::AddedEnvironments,
    /// Messages queued for threads (`thread/queue/*`), opened on first use.
    thread_queue: tokio::sync::OnceCell<Arc<keel_core::ThreadQueue>>,
    /// Skill folders a client added (`skills/extraRoots/set`), for the server's lifetime.
    pub(crate) extra_skill_roots: std::sync::Mutex<Vec<PathBuf>>,
    /// Features a client turned on or off (`experimentalFeature/enablement/set`), for the
    /// server's lifetime.
    pub(crate) feature_enablement: std::sync::Mutex<std::collections::BTreeMap<String, bool>>,
    /// Sections, attachments and git metadata of threads, opened on first use.
    pub(crate) thread_organizer: tokio::sync::OnceCell<Arc<keel_core::ThreadOrganizer>>,
    /// Connections being served now (the `keel.app_server.connections` gauge).
    pub(crate) connections: Arc<std::sync::atomic::AtomicUsize>,
}

impl AppState {
    /// Checks that a client may write `path` (`fs/*`) against the server's configuration as it
    /// now stands ([`crate::ceiling`]).
    pub(crate) fn check_client_write(&self, method: &str, path: &std::path::Path) -> Result<()> {
        let server = self.resolve_config(&Default::default())?;
        crate::ceiling::check_write(&server, method, path)
    }

    pub(crate) fn new(config: ServerConfig) -> Self {
        let source = config.session_source.clone();
        let client_backends = config.client_backends.clone();
        let mut builder = ConversationManager::builder()
            .session_source(source)
            .client_backends(client_backends);
        let (catalog, files): (Arc<dyn keel_core::ThreadCatalog>, _) = match &config.threads {
            crate::ThreadBackend::Files => {
                let files = Arc::new(keel_core::FileThreadCatalog::new(&config.keel_home));
                (files.clone(), Some(files))
            }
            crate::ThreadBackend::Shared { store, catalog } => {
                builder = builder.rollout_store(store.clone());
                (catalog.clone(), None)
            }
        };
        let manager = builder.build().unwrap_or_default();
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let served = connections.clone();
        manager.observe_gauge(
            "keel.app_server.connections",
            "Clients connected to the app-server",
            move || served.load(std::sync::atomic::Ordering::Relaxed) as u64,
        );
        Self {
            read_states: Arc::new(crate::read_state::ReadStates::new(
                &config.keel_home,
                &catalog,
            )),
            config,
            manager,
            connections,
            threads: Mutex::new(HashMap::new()),
            config_writes: std::sync::Mutex::new(()),
            catalog,
            files,
            resumes: Default::default(),
            draining: std::sync::atomic::AtomicBool::new(false),
            thread_queue: tokio::sync::OnceCell::new(),
            thread_organizer: tokio::sync::OnceCell::new(),
            extra_skill_roots: Default::default(),
            feature_enablement: Default::default(),
            environments: Default::default(),
        }
    }

    /// From now on the server is stopping: `/readyz` fails, so a load balancer sends it no
    /// new clients, while the connected ones are served until it stops.
    pub(crate) fn start_draining(&self) {
        self.draining
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether the server takes new clients: not draining, and its threads reachable; why
    /// not otherwise.
    pub(crate) async fn readiness(&self) -> std::result::Result<(), String> {
        if self.draining.load(std::sync::atomic::Ordering::Acquire) {
            return Err("draining: the server is stopping".to_string());
        }
        self.catalog
            .ready()
            .await
            .map_err(|err| format!("threads unreachable: {err}"))
    }

    /// The rollout file of recorded thread `id` (live or, with `archived`, in the archive).
    pub(crate) async fn find_rollout(
        &self,
        id: ConversationId,
        archived: bool,
    ) -> Result<Option<std::path::PathBuf>> {
        match &self.files {
            Some(files) => Ok(files.find_path(id, archived).await?),
            None => Ok(None),
        }
    }

    /// Whether threads live in a store other servers share (read by id, not from files).
    pub(crate) fn shares_threads(&self) -> bool {
        self.files.is_none()
    }

    /// The summary of recorded thread `id`, live or else archived.
    pub(crate) async fn recorded_summary(
        &self,
        id: ConversationId,
    ) -> Result<Option<keel_core::ConversationSummary>> {
        if let Some(found) = self.catalog.find(id, false).await? {
            return Ok(Some(found));
        }
        Ok(self.catalog.find(id, true).await?)
    }

    /// The home's queued messages (opened on first use).
    pub(crate) async fn thread_queue(&self) -> Result<Arc<keel_core::ThreadQueue>> {
        self.thread_queue
            .get_or_try_init(|| async {
                let home = self.config.keel_home.clone();
                let queue =
                    tokio::task::spawn_blocking(move || keel_core::ThreadQueue::open(&home))
                        .await
                        .map_err(|err| AppServerError::Internal(format!("thread queue: {err}")))?
                        .map(Arc::new)
                        .map_err(|err| AppServerError::Internal(err.to_string()))?;
                let counted = Arc::downgrade(&queue);
                self.manager.observe_gauge(
                    "keel.thread_queue.depth",
                    "Messages queued for threads (keel queue, thread/queue/*)",
                    move || {
                        counted
                            .upgrade()
                            .and_then(|queue| queue.total_len().ok())
                            .map_or(0, |depth| depth as u64)
                    },
                );
                Ok(queue)
            })
            .await
            .cloned()
    }

    /// Tells a loaded thread's followers and queue runner that its queue changed.
    pub(crate) async fn queue_changed(&self, id: ConversationId) {
        if let Some(thread) = self.loaded(id).await {
            thread.notify_queue_changed().await;
        }
    }

    /// Resolves the configuration for a thread with a client's overrides; under the
    /// operator's ceiling ([`crate::ceiling`]) the result may give no more than the server's
    /// own configuration.
    pub(crate) fn resolve_config(&self, overrides: &ThreadOverrides) -> Result<Config> {
        let asks_something = overrides.config.as_ref().is_some_and(|map| !map.is_empty())
            || overrides.cwd.is_some()
            || overrides.sandbox.is_some();
        let server = if asks_something {
            Some(self.resolve_config(&ThreadOverrides::default())?)
        } else {
            None
        };
        let mut cli = self.config.cli_overrides.clone();
        for (name, enabled) in lock(&self.feature_enablement).iter() {
            cli.push((format!("features.{name}"), toml::Value::Boolean(*enabled)));
        }
        if let Some(map) = &overrides.config {
            for (key, value) in map {
                if let Some(server) = &server {
                    crate::ceiling::check_config_key(server, "thread settings", key)?;
                }
                cli.push((key.clone(), json_to_toml(key, value)?));
            }
        }
        let typed = ConfigOverrides {
            model: overrides.model.clone(),
            model_provider: overrides.model_provider.clone(),
            cwd: overrides.cwd.clone(),
            approval_policy: overrides.approval_policy,
            sandbox_mode: overrides.sandbox,
            base_instructions: overrides.base_instructions.clone(),
            developer_instructions: overrides.developer_instructions.clone(),
            ..ConfigOverrides::default()
        };
        let mut config =
            Config::load_with_env(&self.config.keel_home, cli, typed, &self.config_env())?;
        config.extra_skill_roots = lock(&self.extra_skill_roots).clone();
        if let Some(server) = &server {
            crate::ceiling::check_sandbox(
                server,
                "thread settings",
                &config.sandbox_policy,
                &config.cwd,
                None,
            )?;
        }
        Ok(config)
    }

    /// Turns `permissions` (a permission profile id) into the sandbox mode it stands for.
    pub(crate) fn apply_permissions(method: &str, overrides: &mut ThreadOverrides) -> Result<()> {
        if let Some(id) = overrides.permissions.as_deref() {
            if overrides.sandbox.is_some() {
                return Err(AppServerError::InvalidParams {
                    method: method.into(),
                    message: "give `sandbox` or `permissions`, not both".into(),
                });
            }
            overrides.sandbox = Some(profile_sandbox_mode(method, id)?);
        }
        Ok(())
    }

    /// The sandbox a permission profile gives, with the `[sandbox_workspace_write]` settings
    /// of the configuration.
    pub(crate) fn profile_sandbox(&self, method: &str, id: &str) -> Result<SandboxPolicyV2> {
        let overrides = ThreadOverrides {
            sandbox: Some(profile_sandbox_mode(method, id)?),
            ..ThreadOverrides::default()
        };
        Ok(self.resolve_config(&overrides)?.sandbox_policy.into())
    }

    /// Registers a new engine conversation as a loaded thread subscribed by `connection`.
    pub(crate) async fn load(
        &self,
        new: NewConversation,
        config: &Config,
        ephemeral: bool,
        recorded: Option<RecordedMeta>,
        turns: Vec<Turn>,
        connection: Arc<Outgoing>,
    ) -> Arc<LoadedThread> {
        let now = chrono::Utc::now().timestamp();
        let RecordedMeta {
            preview,
            name,
            created_at,
            source,
        } = recorded.unwrap_or_else(|| RecordedMeta {
            preview: String::new(),
            name: None,
            created_at: now,
            source: self.config.session_source.clone(),
        });
        let settings = thread_settings(config);
        let meta = ThreadMeta {
            forked_from_id: None,
            model: Some(config.model.clone()),
            path: new.session_configured.rollout_path.clone(),
            name,
            preview,
            cwd: config.cwd.clone(),
            model_provider: config.model_provider_id.clone(),
            created_at,
            updated_at: now,
            ephemeral,
            source,
            environment_id: config.environment_id().to_string(),
        };
        let has_own_tools = !new.dynamic_tools.is_empty();
        let thread = LoadedThread::start(
            new.conversation,
            settings,
            meta,
            turns,
            self.read_states.clone(),
        );
        if has_own_tools {
            thread.set_tool_client(connection.clone());
        }
        thread.subscribe(connection);
        self.threads.lock().await.insert(thread.id, thread.clone());
        if self.config.deliver_queued_messages && !ephemeral {
            match self.thread_queue().await {
                Ok(queue) => {
                    tokio::spawn(crate::threads::queue_runner::deliver_queued(
                        thread.clone(),
                        queue,
                    ));
                }
                Err(err) => tracing::warn!("queued messages will not be delivered: {err}"),
            }
        }
        thread
    }

    /// Shows the threads agents spawn: each becomes a loaded thread followed by the
    /// connections that follow its parent, announced with `thread/started` before its first
    /// event, and forgotten once its conversation ends.
    pub(crate) fn follow_spawned_threads(self: &Arc<Self>) {
        let mut spawned = self.manager.subscribe_spawned();
        let state = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(child) = spawned.recv().await {
                let Some(state) = state.upgrade() else {
                    break;
                };
                state.load_spawned(child).await;
            }
        });
    }

    async fn load_spawned(self: &Arc<Self>, child: SpawnedConversation) {
        let config = &child.config;
        let now = chrono::Utc::now().timestamp();
        let settings = thread_settings(config);
        let meta = ThreadMeta {
            forked_from_id: None,
            model: Some(config.model.clone()),
            path: child.new.session_configured.rollout_path.clone(),
            name: None,
            preview: String::new(),
            cwd: config.cwd.clone(),
            model_provider: config.model_provider_id.clone(),
            created_at: now,
            updated_at: now,
            ephemeral: child.ephemeral,
            environment_id: config.environment_id().to_string(),
            source: SessionSource::SubAgent(Box::new(SubAgentSource::ThreadSpawn {
                parent_thread_id: child.parent_id.to_string(),
                depth: i32::try_from(child.depth).unwrap_or(i32::MAX),
                agent_nickname: None,
                agent_path: Some(child.agent_path.clone()),
                agent_role: None,
            })),
        };
        let thread = LoadedThread::new(
            child.new.conversation,
            settings,
            meta,
            Vec::new(),
            self.read_states.clone(),
        );
        let followers = match self.loaded(child.parent_id).await {
            Some(parent) => parent.subscribers(),
            None => Vec::new(),
        };
        for follower in followers {
            thread.subscribe(follower);
        }
        self.threads.lock().await.insert(thread.id, thread.clone());
        thread
            .broadcast(ServerNotification::ThreadStarted(
                ThreadStartedNotification {
                    thread: thread.to_thread(false),
                },
            ))
            .await;
        thread.start_pump();
        let state = Arc::downgrade(self);
        tokio::spawn(async move {
            thread.finished().await;
            if let Some(state) = state.upgrade() {
                let mut threads = state.threads.lock().await;
                if threads
                    .get(&thread.id)
                    .is_some_and(|t| Arc::ptr_eq(t, &thread))
                {
                    threads.remove(&thread.id);
                }
            }
        });
    }

    pub(crate) async fn loaded(&self, id: ConversationId) -> Option<Arc<LoadedThread>> {
        self.threads.lock().await.get(&id).cloned()
    }

    /// Removes a thread from memory, stopping its engine.
    pub(crate) async fn unload(&self, id: ConversationId) -> Option<Arc<LoadedThread>> {
        let thread = self.threads.lock().await.remove(&id)?;
        self.stop(id, &thread).await;
        Some(thread)
    }

    /// Stops a thread already removed from the map: its pump, its approvals, its engine.
    async fn stop(&self, id: ConversationId, thread: &LoadedThread) {
        thread.close();
        self.manager.remove_conversation(id).await;
        if let Err(err) = thread
            .conversation
            .submit(keel_protocol::Op::Shutdown)
            .await
        {
            tracing::debug!("thread {id} already shut down: {err}");
        }
    }

    /// Unloads every thread and waits, up to `limit` in all, until their engines have stopped
    /// (their end-of-session work, such as `SessionEnd` hooks, done).
    pub(crate) async fn shutdown_threads(&self, limit: std::time::Duration) {
        let threads: Vec<(ConversationId, Arc<LoadedThread>)> =
            self.threads.lock().await.drain().collect();
        let mut stopped = Vec::new();
        for (id, thread) in &threads {
            let status = thread.conversation.watch_agent_status();
            self.stop(*id, thread).await;
            stopped.push(status);
        }
        let all = futures::future::join_all(stopped.into_iter().map(|mut status| async move {
            let _ = status
                .wait_for(|state| state.status == keel_protocol::CollabAgentStatus::Shutdown)
                .await;
        }));
        if tokio::time::timeout(limit, all).await.is_err() {
            tracing::warn!("threads still shutting down after {limit:?}; leaving them");
        }
        self.manager.shutdown_telemetry().await;
    }

    /// Unloads thread `id` if no connection follows it any more; `true` if it did. Checked
    /// under the map's lock, so a concurrent `thread/resume` either finds the thread still
    /// loaded (and keeps it) or not loaded (and loads it again from its file).
    pub(crate) async fn unload_if_unfollowed(&self, id: ConversationId) -> bool {
        self.unload_matching(id, |_| true).await
    }

    /// Unloads `thread` if it is still the loaded instance of its id and no connection
    /// follows it; `true` if it did.
    async fn unload_thread_if_unfollowed(&self, thread: &Arc<LoadedThread>) -> bool {
        self.unload_matching(thread.id, |loaded| Arc::ptr_eq(loaded, thread))
            .await
    }

    async fn unload_matching(
        &self,
        id: ConversationId,
        matches: impl FnOnce(&Arc<LoadedThread>) -> bool,
    ) -> bool {
        let thread = {
            let mut threads = self.threads.lock().await;
            match threads.get(&id) {
                Some(thread) if !thread.has_subscribers() && matches(thread) => threads.remove(&id),
                _ => None,
            }
        };
        let Some(thread) = thread else {
            return false;
        };
        self.stop(id, &thread).await;
        true
    }

    /// Drops a connection from every thread it subscribed to, and unloads the threads no
    /// connection follows any more: at once if idle, else when their turn ends (a client that
    /// reconnects and resumes the thread before that keeps it loaded).
    pub(crate) async fn disconnect(self: &Arc<Self>, connection: u64) {
        let mut unfollowed = Vec::new();
        for thread in self.threads.lock().await.values() {
            thread.forget_connection(connection);
            thread.forget_tool_client(connection);
            if thread.unsubscribe(connection) && !thread.has_subscribers() {
                unfollowed.push(Arc::clone(thread));
            }
        }
        for thread in unfollowed {
            let state = Arc::clone(self);
            tokio::spawn(async move {
                thread.idle().await;
                let id = thread.id;
                if state.unload_thread_if_unfollowed(&thread).await {
                    tracing::debug!("thread {id} unloaded: its last client disconnected");
                }
            });
        }
    }

    /// Taken for the duration of one write to `config.toml`.
    /// What configuration resolves against: the server's working directory and the provider
    /// variables of its environment.
    pub(crate) fn config_env(&self) -> ConfigEnv {
        ConfigEnv {
            process_cwd: self.config.cwd.clone(),
            openai_base_url: std::env::var("OPENAI_BASE_URL").ok(),
            oss_base_url: keel_core::config::oss_base_url_from(|name| std::env::var(name).ok()),
        }
    }

    pub(crate) fn config_writes(&self) -> std::sync::MutexGuard<'_, ()> {
        self.config_writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn keel_home(&self) -> &Path {
        &self.config.keel_home
    }
}

impl Drop for AppState {
    /// Each thread's event pump keeps it (and so its conversation) alive; stopping the pumps
    /// lets the conversations shut down and kill their commands when the state goes away
    /// (an embedder dropping its in-process client).
    fn drop(&mut self) {
        for thread in self.threads.get_mut().values() {
            thread.close();
        }
    }
}

/// The settings a thread reports, from the configuration it runs with.
fn thread_settings(config: &Config) -> ThreadSettings {
    ThreadSettings {
        model: config.model.clone(),
        model_provider: config.model_provider_id.clone(),
        cwd: config.cwd.clone(),
        approval_policy: config.approval_policy,
        approvals_reviewer: Default::default(),
        sandbox: config.sandbox_policy.clone().into(),
        reasoning_effort: config.model_reasoning_effort.clone(),
    }
}

/// The sandbox mode of a built-in permission profile, or an error naming the known ones.
fn profile_sandbox_mode(method: &str, id: &str) -> Result<keel_protocol::SandboxMode> {
    PERMISSION_PROFILES
        .iter()
        .find(|(known, _)| *known == id)
        .map(|(_, mode)| *mode)
        .ok_or_else(|| AppServerError::InvalidParams {
            method: method.into(),
            message: format!(
                "unknown permission profile `{id}`; Keel has {}",
                PERMISSION_PROFILES
                    .iter()
                    .map(|(known, _)| format!("`{known}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// Parses a thread id, naming it in the error.
pub(crate) fn parse_thread_id(id: &str) -> Result<ConversationId> {
    id.parse()
        .map_err(|err| AppServerError::InvalidRequest(format!("invalid thread id: {err}")))
}

/// Converts a JSON config override value to TOML, naming the key when it cannot be.
fn json_to_toml(key: &str, value: &serde_json::Value) -> Result<toml::Value> {
    use serde_json::Value as J;
    Ok(match value {
        J::Null => {
            return Err(AppServerError::InvalidParams {
                method: "config".into(),
                message: format!("`{key}` is null; omit it instead"),
            });
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or_default()),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(items) => toml::Value::Array(
            items
                .iter()
                .map(|v| json_to_toml(key, v))
                .collect::<Result<_>>()?,
        ),
        J::Object(map) => {
            let mut table = toml::Table::new();
            for (k, v) in map {
                table.insert(k.clone(), json_to_toml(key, v)?);
            }
            toml::Value::Table(table)
        }
    })
}

/// A std mutex's value, even if a panicking holder poisoned it.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
