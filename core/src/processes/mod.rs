//! The engine's one process layer: every command the model runs (the `shell` tool and the
//! unified-exec sessions) is started through a keel-exec-server client, in this process by
//! default or on a remote `keel exec-server` when `exec_server_url` is set.
//!
//! Policy stays above this layer: approval and sandbox wrapping are decided by the tools,
//! which hand a finished argv here. Output of every process is collected by one router task
//! into a per-process buffer, so nothing printed between two polls of a long-lived process is
//! lost, and a process's owner reads it when it wants.

mod client_terminal;
mod connected;
mod error;
mod handle;
mod output_buffer;
mod router;
mod run_to_exit;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use keel_exec_server::{ExecServerClient, ExecServerClientOptions, ExecServerConfig};
use keel_protocol::exec_server::{
    ExecParams, PATCH_EXTENSION, PatchApplyResponse, PatchParams, PatchPlanResponse,
};
use tokio::sync::Mutex;

mod files;
pub(crate) use client_terminal::run_in_client_terminal;
use connected::Connected;
pub use error::ProcessError;
pub(crate) use handle::ProcessHandle;
pub(crate) use output_buffer::{HeadTailBuffer, truncate_for_model};
pub(crate) use router::ProcessStates;
pub(crate) use run_to_exit::{ExecOutcome, ExecStop, run_to_exit};

/// Events the client may hold for the router before it falls behind. The router only moves
/// each event into its process's buffer, so it is rarely far behind; every conversation has
/// its own channel and the channel's slots are allocated up front (4096 cost 0.36 MiB per
/// conversation), so the bound stays small. A router that does fall behind marks every
/// process's output as incomplete; if the events it missed held an exit, a reader without a
/// deadline would not learn of it (not seen in practice; a status query after a lag would
/// close that gap).
const EVENT_CAPACITY: usize = 512;
/// After a command exits, how long its output may stay silent before the rest is given
/// up: a background child (`server &`) can hold the pipes open for as long as it runs.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);

/// How long a patch request may go unanswered before the server is reported as silent.
const PATCH_TIMEOUT: Duration = Duration::from_secs(120);

fn no_patch_answer() -> ProcessError {
    ProcessError::Connect(format!(
        "the exec-server did not answer the patch request within {} s",
        PATCH_TIMEOUT.as_secs()
    ))
}

/// Where processes run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExecTarget {
    /// An exec-server handler in this process.
    InProcess,
    /// A `keel exec-server` listening at this websocket URL.
    Remote {
        /// `exec_server_url`.
        url: String,
        /// `exec_server_auth_token_env`: where the bearer token is, when the server wants one.
        token_env: Option<String>,
        /// An environment's `auth_token_file`: the token in a file (before `token_env`).
        token_file: Option<PathBuf>,
        /// A token given directly (before the file and the variable).
        token: Option<keel_exec_server::BearerToken>,
    },
}

impl ExecTarget {
    /// Sets `config`'s exec-server and token to this target's.
    pub(crate) fn apply_to(&self, config: &mut crate::config::Config) {
        match self {
            Self::InProcess => {
                config.exec_server_url = None;
                config.exec_server_auth_token_env = None;
                config.exec_server_auth_token_file = None;
                config.exec_server_auth_token = None;
            }
            Self::Remote {
                url,
                token_env,
                token_file,
                token,
            } => {
                config.exec_server_url = Some(url.clone());
                config.exec_server_auth_token_env = token_env.clone();
                config.exec_server_auth_token_file = token_file.clone();
                config.exec_server_auth_token = token.clone();
            }
        }
    }

    /// Where `config` says commands run: its `exec_server_url` with its token, or here.
    pub(crate) fn for_config(config: &crate::config::Config) -> Self {
        match &config.exec_server_url {
            Some(url) => Self::Remote {
                url: url.clone(),
                token_env: config.exec_server_auth_token_env.clone(),
                token_file: config.exec_server_auth_token_file.clone(),
                token: config.exec_server_auth_token.clone(),
            },
            None => Self::InProcess,
        }
    }
}

/// The bearer token for a remote exec-server, read from the environment variable
/// `exec_server_auth_token_env` names; `None` when no variable is named.
pub fn exec_server_bearer_token(
    token_env: Option<&str>,
) -> Result<Option<keel_exec_server::BearerToken>, ProcessError> {
    let Some(name) = token_env else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(token) if !token.trim().is_empty() => {
            Ok(Some(keel_exec_server::BearerToken::new(&token)))
        }
        _ => Err(ProcessError::Connect(format!(
            "exec_server_auth_token_env names `{name}`, but that environment variable is unset \
             or empty"
        ))),
    }
}

/// The bearer token for a remote exec-server: the contents of `token_file` when one is
/// named (an environment's `auth_token_file`, surrounding whitespace ignored), else what
/// [`exec_server_bearer_token`] reads from `token_env`.
pub fn exec_server_bearer_token_from(
    token_env: Option<&str>,
    token_file: Option<&std::path::Path>,
) -> Result<Option<keel_exec_server::BearerToken>, ProcessError> {
    let Some(file) = token_file else {
        return exec_server_bearer_token(token_env);
    };
    match std::fs::read_to_string(file) {
        Ok(token) if !token.trim().is_empty() => {
            Ok(Some(keel_exec_server::BearerToken::new(token.trim())))
        }
        Ok(_) => Err(ProcessError::Connect(format!(
            "the exec-server token file {} is empty",
            file.display()
        ))),
        Err(err) => Err(ProcessError::Connect(format!(
            "cannot read the exec-server token file {}: {err}",
            file.display()
        ))),
    }
}

/// A command ready to start, after policy decided how.
#[derive(Debug, Clone)]
pub(crate) struct ProcessSpec {
    pub argv: Vec<String>,
    /// The `argv[0]` the program sees, when it differs (the sandbox helper).
    pub arg0: Option<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    /// Run on a pseudo-terminal (input can be written) instead of pipes (stdin closed).
    pub tty: bool,
    /// The span of the tool call starting it (W3C `traceparent`), for a remote exec-server
    /// that traces.
    pub traceparent: Option<String>,
}

/// One conversation's connection to the process service, made on first use.
///
/// Dropping it closes the connection, which kills every process it started.
pub(crate) struct ProcessLayer {
    /// Where; changed between turns when the conversation moves to another environment.
    target: std::sync::Mutex<ExecTarget>,
    /// The live connection; replaced by a new one on the next use once it is lost.
    connected: Mutex<Option<Arc<Connected>>>,
    /// Where a remote connection's state is reported.
    link: Arc<tokio::sync::watch::Sender<crate::EnvironmentLink>>,
    /// Counts connections, so the end of a replaced one is not reported over its successor.
    generation: Arc<std::sync::atomic::AtomicU64>,
    /// The client's files and terminals, with the conversation they are asked for.
    client: Option<(keel_protocol::ConversationId, crate::ClientBackends)>,
}

impl ProcessLayer {
    pub(crate) fn new(
        target: ExecTarget,
        link: Arc<tokio::sync::watch::Sender<crate::EnvironmentLink>>,
    ) -> Self {
        Self {
            target: std::sync::Mutex::new(target),
            connected: Mutex::new(None),
            link,
            generation: Arc::default(),
            client: None,
        }
    }

    /// Uses the client's files and terminals for `conversation` where it offers them (only
    /// while the processes run on this host: a remote environment's files are not the
    /// client's).
    pub(crate) fn with_client(
        mut self,
        conversation: keel_protocol::ConversationId,
        backends: crate::ClientBackends,
    ) -> Self {
        self.client = Some((conversation, backends));
        self
    }

    /// The client's files for this conversation, when it offers them and the files are here.
    pub(crate) fn client_files(
        &self,
    ) -> Option<(keel_protocol::ConversationId, Arc<dyn crate::ClientFiles>)> {
        let (conversation, backends) = self.client.as_ref().filter(|_| self.is_local())?;
        let files = backends.files_for(*conversation)?;
        Some((*conversation, Arc::clone(files)))
    }

    /// The client's terminals for this conversation, when it offers them and the commands
    /// run here.
    pub(crate) fn client_terminals(
        &self,
    ) -> Option<(
        keel_protocol::ConversationId,
        Arc<dyn crate::ClientTerminals>,
    )> {
        let (conversation, backends) = self.client.as_ref().filter(|_| self.is_local())?;
        let terminals = backends.terminals_for(*conversation)?;
        Some((*conversation, Arc::clone(terminals)))
    }

    /// Whether processes run on this host (so files this process writes are theirs to read).
    pub(crate) fn is_local(&self) -> bool {
        *self.target() == ExecTarget::InProcess
    }

    fn target(&self) -> std::sync::MutexGuard<'_, ExecTarget> {
        self.target
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Moves the processes to `target`: the connection to the old place closes, and what ran
    /// there through it is stopped.
    pub(crate) async fn retarget(&self, target: ExecTarget) {
        let mut slot = self.connected.lock().await;
        *self.target() = target;
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if slot.take().is_some() {
            self.link.send_replace(crate::EnvironmentLink::NotConnected);
        }
    }

    /// The connection, made on first use. A remote connection that was lost (the server
    /// restarted, the network went) is made again: what was running on it is gone, and
    /// nothing it was doing is repeated.
    async fn connected(&self) -> Result<Arc<Connected>, ProcessError> {
        let mut slot = self.connected.lock().await;
        if let Some(live) = slot.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok(live.clone());
        }
        if slot.take().is_some() {
            tracing::warn!("the exec-server connection was lost; connecting again");
        }
        let options = ExecServerClientOptions {
            client_name: format!("keel-core {}", env!("CARGO_PKG_VERSION")),
            event_capacity: EVENT_CAPACITY,
            ..ExecServerClientOptions::default()
        };
        let target = self.target().clone();
        let client = match &target {
            ExecTarget::InProcess => {
                let config = ExecServerConfig {
                    output_drain_timeout: DRAIN_AFTER_EXIT,
                    ..ExecServerConfig::default()
                };
                ExecServerClient::in_process(config, options).await
            }
            ExecTarget::Remote {
                url,
                token_env,
                token_file,
                token,
            } => {
                let bearer_token = match token {
                    Some(token) => Some(token.clone()),
                    None => {
                        exec_server_bearer_token_from(token_env.as_deref(), token_file.as_deref())?
                    }
                };
                let options = ExecServerClientOptions {
                    bearer_token,
                    ..options
                };
                ExecServerClient::connect_websocket(url, options).await
            }
        }
        .map_err(|err| ProcessError::Connect(err.to_string()))?;
        let states = Arc::new(ProcessStates::default());
        let router = router::spawn(client.subscribe(), states.clone());
        let connected = Arc::new(Connected {
            client,
            states,
            _router: router,
        });
        *slot = Some(connected.clone());
        if !self.is_local() {
            self.report_link(&connected.client);
        }
        Ok(connected)
    }

    /// Reports the new connection, and its end when the server or the network closes it (not
    /// when the conversation ends: the watcher holds the report channel only weakly).
    fn report_link(&self, client: &ExecServerClient) {
        use std::sync::atomic::Ordering;
        let mine = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        self.link.send_replace(crate::EnvironmentLink::Connected);
        let mut events = client.subscribe();
        let link = Arc::downgrade(&self.link);
        let generation = self.generation.clone();
        tokio::spawn(async move {
            while !matches!(
                events.recv().await,
                Err(tokio::sync::broadcast::error::RecvError::Closed)
            ) {}
            if let Some(link) = link
                .upgrade()
                .filter(|_| generation.load(Ordering::Acquire) == mine)
            {
                tracing::warn!("the connection to the exec-server closed");
                link.send_replace(crate::EnvironmentLink::Disconnected {
                    reason: "the connection to the exec-server closed".to_string(),
                });
            }
        });
    }

    /// The connection, or why there is none. A remote server that answers without
    /// `extension` (an older or foreign exec-server) is refused with a message naming it.
    async fn connected_with(&self, extension: &str) -> Result<Arc<Connected>, ProcessError> {
        let connected = self.connected().await?;
        if !connected.client.supports(extension) {
            return Err(ProcessError::Connect(format!(
                "the exec-server does not offer `{extension}` (it is older than this Keel, or not \
                 Keel's); upgrade it"
            )));
        }
        Ok(connected)
    }

    /// Checks a patch against the files where the turn's commands run, under its sandbox.
    pub(crate) async fn plan_patch(
        &self,
        params: PatchParams,
    ) -> Result<PatchPlanResponse, ProcessError> {
        let connected = self.connected_with(PATCH_EXTENSION).await?;
        tokio::time::timeout(PATCH_TIMEOUT, connected.client.plan_patch(params))
            .await
            .map_err(|_| no_patch_answer())?
            .map_err(ProcessError::from)
    }

    /// Applies a patch where the turn's commands run, all or nothing, under its sandbox.
    pub(crate) async fn apply_patch(
        &self,
        params: PatchParams,
    ) -> Result<PatchApplyResponse, ProcessError> {
        let connected = self.connected_with(PATCH_EXTENSION).await?;
        tokio::time::timeout(PATCH_TIMEOUT, connected.client.apply_patch(params))
            .await
            .map_err(|_| no_patch_answer())?
            .map_err(ProcessError::from)
    }

    /// Starts a process; its output is collected from its first byte.
    pub(crate) async fn spawn(&self, spec: ProcessSpec) -> Result<ProcessHandle, ProcessError> {
        let connected = self.connected().await?;
        let response = connected
            .client
            .exec(ExecParams {
                argv: spec.argv,
                cwd: spec.cwd,
                env: spec.env,
                tty: spec.tty,
                arg0: spec.arg0,
                traceparent: spec.traceparent,
            })
            .await
            .map_err(|err| match err {
                keel_exec_server::ExecServerError::ConnectionClosed => {
                    ProcessError::LostWhileStarting
                }
                other => ProcessError::Request(other),
            })?;
        let state = connected.states.claim(&response.session_id);
        Ok(ProcessHandle::new(
            connected.clone(),
            response.session_id,
            state,
        ))
    }
}
