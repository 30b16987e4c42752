//! Loaded threads: each wraps one engine conversation, pumps its events through the
//! translator to every subscribed connection, and carries approvals out as server requests.

mod approvals;
mod client_tools;
mod elicitation;
mod first_answer;
mod history;
mod items;
mod pending_approval;
pub(crate) mod queue_runner;
mod settings;
mod translate;
mod user_input;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use keel_core::Conversation;
use keel_protocol::app_server::{
    ServerNotification, Thread, ThreadActiveFlag, ThreadReadState,
    ThreadReadStateChangedNotification, ThreadSettings, ThreadSettingsUpdatedNotification,
    ThreadStatus, ThreadStatusChangedNotification, ThreadTurnSettings, Turn, UserInput,
};
use keel_protocol::{CallId, ConversationId, EventMsg};
use tokio::task::JoinHandle;

pub(crate) use history::{TurnsBuilder, turns_from_events};
use pending_approval::PendingApproval;
use settings::CurrentSettings;
pub(crate) use settings::SettingsChange;
use translate::{Output, Translator, TurnBoundary};

use crate::outgoing::{ConnectionId, Outgoing};
use crate::read_state::ReadStates;

/// What a thread looks like in lists, apart from its turns and status.
#[derive(Debug, Clone)]
pub(crate) struct ThreadMeta {
    pub path: Option<PathBuf>,
    pub name: Option<String>,
    pub preview: String,
    pub cwd: PathBuf,
    pub model_provider: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub ephemeral: bool,
    /// Who started it (a client, or another thread's agent).
    pub source: keel_protocol::app_server::SessionSource,
    /// The thread it was forked from.
    pub forked_from_id: Option<String>,
    /// The model it was recorded with (a loaded thread reports its current one instead).
    pub model: Option<String>,
    /// Where its commands run when loaded (`Config::environment_id`).
    pub environment_id: String,
}

/// A thread loaded in this server.
pub(crate) struct LoadedThread {
    pub id: ConversationId,
    pub conversation: Arc<Conversation>,
    settings: Mutex<CurrentSettings>,
    meta: Mutex<ThreadMeta>,
    subscribers: Mutex<HashMap<ConnectionId, Arc<Outgoing>>>,
    translator: Mutex<Translator>,
    approvals: Mutex<HashMap<CallId, PendingApproval>>,
    /// A turn accepted by `turn/start` whose `task_started` has not arrived yet.
    claimed_turn: Mutex<Option<String>>,
    pump: Mutex<Option<JoinHandle<()>>>,
    /// Woken whenever a turn ends.
    turn_ended: tokio::sync::Notify,
    /// Woken when the thread's queued messages change (see `queue_runner`).
    queue_wake: tokio::sync::Notify,
    /// Cancelled once the conversation has ended and every event was delivered.
    finished: tokio_util::sync::CancellationToken,
    /// Cancelled once the client that loaded the thread has its answer: the pump holds the
    /// thread's first events until then, so none reaches a client before the thread does.
    answered: tokio_util::sync::CancellationToken,
    /// Where a finished turn marks the thread unread.
    read_states: Arc<ReadStates>,
    /// Whether the thread was started with tools of the client's own (`dynamicTools`).
    has_own_tools: std::sync::atomic::AtomicBool,
    /// The connection that runs them: the one that defined them, or, once it is gone, the
    /// next one to resume the thread.
    tool_client: Mutex<Option<Arc<Outgoing>>>,
    /// Calls of those tools sent to it and not answered yet, by engine call id.
    tool_calls: Mutex<HashMap<CallId, (Arc<Outgoing>, keel_protocol::RequestId)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LoadedThread {
    /// Wraps a conversation and starts reading its events; they reach subscribers once the
    /// loading client has its answer ([`Self::answered`]).
    pub(crate) fn start(
        conversation: Arc<Conversation>,
        settings: ThreadSettings,
        meta: ThreadMeta,
        turns: Vec<Turn>,
        read_states: Arc<ReadStates>,
    ) -> Arc<Self> {
        let thread = Self::new(conversation, settings, meta, turns, read_states);
        thread.start_pump_after_answer();
        thread
    }

    /// Wraps a conversation without reading its events yet (so subscribers can be added and
    /// told about the thread before its first event).
    pub(crate) fn new(
        conversation: Arc<Conversation>,
        settings: ThreadSettings,
        meta: ThreadMeta,
        turns: Vec<Turn>,
        read_states: Arc<ReadStates>,
    ) -> Arc<Self> {
        let id = conversation.id();
        Arc::new(Self {
            id,
            conversation,
            settings: Mutex::new(CurrentSettings {
                collaboration_mode: "default".to_string(),
                settings,
                permission_profile: None,
            }),
            meta: Mutex::new(meta),
            subscribers: Mutex::new(HashMap::new()),
            translator: Mutex::new(Translator::new(id.to_string(), turns)),
            approvals: Mutex::new(HashMap::new()),
            claimed_turn: Mutex::new(None),
            pump: Mutex::new(None),
            turn_ended: tokio::sync::Notify::new(),
            queue_wake: tokio::sync::Notify::new(),
            finished: tokio_util::sync::CancellationToken::new(),
            answered: tokio_util::sync::CancellationToken::new(),
            has_own_tools: std::sync::atomic::AtomicBool::new(false),
            tool_client: Mutex::new(None),
            tool_calls: Mutex::new(HashMap::new()),
            read_states,
        })
    }

    /// Starts delivering the conversation's events to subscribers.
    pub(crate) fn start_pump(self: &Arc<Self>) {
        self.answered();
        self.start_pump_after_answer();
    }

    /// Starts reading the conversation's events, delivering them once [`Self::answered`]
    /// is called (or after [`ANSWER_WAIT`], so a lost answer never stalls the engine).
    pub(crate) fn start_pump_after_answer(self: &Arc<Self>) {
        let pump = tokio::spawn(pump_events(self.clone()));
        *lock(&self.pump) = Some(pump);
        // Ends with the engine (its sender goes with it); holds the thread only weakly.
        tokio::spawn(report_environment_link(
            Arc::downgrade(self),
            self.conversation.watch_environment_link(),
        ));
    }

    /// The client that loaded the thread has its answer: events may flow.
    pub(crate) fn answered(&self) {
        self.answered.cancel();
    }

    /// Returns once the conversation has ended and its last event was delivered.
    pub(crate) async fn finished(&self) {
        self.finished.cancelled().await;
    }

    /// The connections following this thread.
    pub(crate) fn subscribers(&self) -> Vec<Arc<Outgoing>> {
        lock(&self.subscribers).values().cloned().collect()
    }

    /// The settings the thread's next turn runs with.
    pub(crate) fn settings(&self) -> ThreadSettings {
        lock(&self.settings).settings.clone()
    }

    /// Records a change already submitted to the engine; the settings in the shape of
    /// `thread/settings/updated`, and whether anything changed.
    pub(crate) fn change_settings(&self, change: &SettingsChange) -> (ThreadTurnSettings, bool) {
        let mut current = lock(&self.settings);
        let changed = current.apply(change);
        (current.turn_settings(), changed)
    }

    /// Notes that the thread's sandbox was chosen by a permission profile (at start).
    pub(crate) fn set_permission_profile(&self, profile: Option<String>) {
        lock(&self.settings).permission_profile = profile;
    }

    /// Tells the thread's clients what its next turn runs with.
    pub(crate) async fn broadcast_settings(&self, settings: ThreadTurnSettings) {
        self.broadcast(ServerNotification::ThreadSettingsUpdated(
            ThreadSettingsUpdatedNotification {
                thread_id: self.id.to_string(),
                thread_settings: settings,
            },
        ))
        .await;
    }

    pub(crate) fn meta(&self) -> ThreadMeta {
        lock(&self.meta).clone()
    }

    pub(crate) fn update_meta(&self, update: impl FnOnce(&mut ThreadMeta)) {
        update(&mut lock(&self.meta));
    }

    pub(crate) fn subscribe(&self, connection: Arc<Outgoing>) {
        lock(&self.subscribers).insert(connection.id(), connection);
    }

    /// Removes a connection; `true` if it was subscribed.
    pub(crate) fn unsubscribe(&self, connection: ConnectionId) -> bool {
        lock(&self.subscribers).remove(&connection).is_some()
    }

    /// Whether any connection still follows this thread (an unfollowed thread is unloaded).
    pub(crate) fn has_subscribers(&self) -> bool {
        !lock(&self.subscribers).is_empty()
    }

    /// Returns once no turn is running (at once if none is), or once the thread is closed.
    pub(crate) async fn idle(&self) {
        loop {
            let ended = self.turn_ended.notified();
            tokio::pin!(ended);
            // Registered before the check, so a turn ending in between still wakes us.
            ended.as_mut().enable();
            if self.active_turn_id().is_none() || lock(&self.pump).is_none() {
                return;
            }
            ended.await;
        }
    }

    /// The running turn, or the one `turn/start` accepted and the engine has not started yet.
    pub(crate) fn active_turn_id(&self) -> Option<String> {
        lock(&self.translator)
            .active_turn_id()
            .map(str::to_string)
            .or_else(|| lock(&self.claimed_turn).clone())
    }

    /// Whether the running turn is a review (which takes no steering input).
    pub(crate) fn is_reviewing(&self) -> bool {
        lock(&self.translator).is_reviewing()
    }

    /// Reserves the thread for a new turn; `Err` names the turn already running.
    pub(crate) fn claim_turn(&self, turn_id: &str) -> Result<(), String> {
        let translator = lock(&self.translator);
        let mut claimed = lock(&self.claimed_turn);
        if let Some(running) = translator
            .active_turn_id()
            .map(str::to_string)
            .or_else(|| claimed.clone())
        {
            return Err(running);
        }
        *claimed = Some(turn_id.to_string());
        Ok(())
    }

    /// Gives up a claim whose turn never reached the engine.
    pub(crate) fn release_claim(&self, turn_id: &str) {
        let mut claimed = lock(&self.claimed_turn);
        if claimed.as_deref() == Some(turn_id) {
            *claimed = None;
        }
    }

    pub(crate) fn status(&self) -> ThreadStatus {
        if self.active_turn_id().is_none() {
            return ThreadStatus::Idle;
        }
        let waiting = !lock(&self.approvals).is_empty();
        ThreadStatus::Active {
            active_flags: if waiting {
                vec![ThreadActiveFlag::WaitingOnApproval]
            } else {
                Vec::new()
            },
        }
    }

    /// Whether a turn ever started in the thread (cheap: no turn is copied).
    pub(crate) fn has_turns(&self) -> bool {
        lock(&self.translator).has_turns()
    }

    pub(crate) fn turns(&self) -> Vec<Turn> {
        lock(&self.translator).all_turns()
    }

    /// Replaces the finished turns (after a rollback).
    pub(crate) fn set_turns(&self, turns: Vec<Turn>) {
        lock(&self.translator).set_turns(turns);
    }

    /// The thread as the protocol shows it.
    /// Records that the thread is a fork of `parent`.
    pub(crate) fn set_forked_from(&self, parent: String) {
        lock(&self.meta).forked_from_id = Some(parent);
    }

    pub(crate) fn to_thread(&self, include_turns: bool) -> Thread {
        let meta = self.meta();
        let settings = lock(&self.settings).settings.clone();
        thread_object(
            self.id,
            &meta,
            Some(&settings),
            self.status(),
            if include_turns {
                self.turns()
            } else {
                Vec::new()
            },
        )
    }

    /// Records steering input in the running turn and tells subscribers.
    pub(crate) async fn steered(&self, input: Vec<UserInput>) {
        let outputs = lock(&self.translator).steer_input(input);
        self.notify_all(outputs).await;
    }

    /// Broadcasts the notifications among `outputs` (used where no approval can arise).
    async fn notify_all(&self, outputs: Vec<Output>) {
        for output in outputs {
            if let Output::Notify(notification) = output {
                self.broadcast(*notification).await;
            }
        }
    }

    /// Waits until every subscriber that asked for every message has room for more.
    async fn wait_for_subscribers(&self) {
        let subscribers: Vec<Arc<Outgoing>> = lock(&self.subscribers).values().cloned().collect();
        for subscriber in subscribers {
            subscriber.wait_for_room().await;
        }
    }

    pub(crate) async fn broadcast(&self, notification: ServerNotification) {
        let subscribers: Vec<Arc<Outgoing>> = lock(&self.subscribers).values().cloned().collect();
        if subscribers.is_empty() {
            return;
        }
        // Encoded once; every subscriber's queue holds the same copy.
        let Some((method, message)) = Outgoing::notification_message(notification) else {
            return;
        };
        for subscriber in subscribers {
            subscriber.notify_shared(method, &message).await;
        }
    }

    /// A turn that brought results nobody has seen yet marks a recorded thread unread (a
    /// turn that only ran the user's own `!cmd` brings none), announced before the turn ends.
    async fn mark_unread(&self, turn: &Turn) {
        let only_own_commands = turn.items.iter().all(|item| {
            matches!(
                item,
                keel_protocol::app_server::ThreadItem::CommandExecution {
                    source: keel_protocol::app_server::CommandExecutionSource::UserShell,
                    ..
                }
            )
        });
        if self.meta().ephemeral || only_own_commands {
            return;
        }
        let read_state = self
            .read_states
            .turn_completed(self.id, turn.id.clone())
            .await;
        self.broadcast_read_state(read_state).await;
    }

    /// Tells the thread's clients its new read state.
    pub(crate) async fn broadcast_read_state(&self, read_state: ThreadReadState) {
        self.broadcast(ServerNotification::ThreadReadStateChanged(
            ThreadReadStateChangedNotification {
                thread_id: self.id.to_string(),
                read_state,
            },
        ))
        .await;
    }

    /// The store of read states this thread writes to.
    pub(crate) fn read_states(&self) -> Arc<ReadStates> {
        self.read_states.clone()
    }

    async fn broadcast_status(&self) {
        let status = self.status();
        self.broadcast(ServerNotification::ThreadStatusChanged(
            ThreadStatusChangedNotification {
                thread_id: self.id.to_string(),
                status,
            },
        ))
        .await;
    }

    async fn deliver(self: &Arc<Self>, outputs: Vec<Output>) {
        for output in outputs {
            match output {
                Output::Notify(notification) => {
                    if let ServerNotification::TurnCompleted(completed) = notification.as_ref() {
                        self.mark_unread(&completed.turn).await;
                    }
                    self.broadcast(*notification).await;
                }
                Output::Approval {
                    call_id,
                    is_patch,
                    request,
                } => {
                    self.ask(call_id, is_patch, request).await;
                }
                Output::UserInput { call_id, request } => {
                    self.ask_user(call_id, request).await;
                }
                Output::ClientTool { call_id, request } => {
                    self.run_client_tool(call_id, request).await;
                }
                Output::Elicitation {
                    server_name,
                    request_id,
                    request,
                } => {
                    self.ask_elicitation(server_name, request_id, request).await;
                }
            }
        }
    }

    /// Stops the pump and pending approvals (the conversation shuts down when dropped).
    pub(crate) fn close(&self) {
        if let Some(pump) = lock(&self.pump).take() {
            pump.abort();
        }
        self.abort_approvals();
        // Nothing will end a turn any more: release whoever waits for one.
        self.turn_ended.notify_waiters();
        self.finished.cancel();
    }
}

/// `thread/environment/connected` and `disconnected` as the engine's connection to the
/// thread's exec-server is made and lost.
async fn report_environment_link(
    thread: std::sync::Weak<LoadedThread>,
    mut link: tokio::sync::watch::Receiver<keel_core::EnvironmentLink>,
) {
    while link.changed().await.is_ok() {
        let state = link.borrow_and_update().clone();
        let Some(thread) = thread.upgrade() else {
            return;
        };
        let params = keel_protocol::app_server::EnvironmentConnectionNotification {
            thread_id: thread.id.to_string(),
            environment_id: thread.meta().environment_id,
        };
        let notification = match state {
            keel_core::EnvironmentLink::Connected => {
                ServerNotification::ThreadEnvironmentConnected(params)
            }
            keel_core::EnvironmentLink::Disconnected { .. } => {
                ServerNotification::ThreadEnvironmentDisconnected(params)
            }
            _ => continue,
        };
        thread.broadcast(notification).await;
    }
}

/// The longest the pump holds a new thread's events for its client's answer.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads the conversation's events until it shuts down.
async fn pump_events(thread: Arc<LoadedThread>) {
    if tokio::time::timeout(ANSWER_WAIT, thread.answered.cancelled())
        .await
        .is_err()
    {
        tracing::debug!(thread = %thread.id, "no answer sent within {ANSWER_WAIT:?}; delivering events");
    }
    while let Ok(event) = thread.conversation.next_event().await {
        // A consumer that must get everything slows the engine down instead of losing
        // events: this pump stops reading, and the engine waits on its bounded channel.
        thread.wait_for_subscribers().await;
        let boundary = lock(&thread.translator).boundary(&event);
        let ends_turn = boundary == Some(TurnBoundary::Ended);
        let starts_turn = boundary == Some(TurnBoundary::Started);
        if ends_turn {
            thread.withdraw_approvals().await;
        }
        if matches!(
            event.msg,
            EventMsg::UserMessage(_) | EventMsg::AgentMessage(_)
        ) {
            thread.update_meta(|meta| {
                meta.updated_at = chrono::Utc::now().timestamp();
                if meta.preview.is_empty()
                    && let EventMsg::UserMessage(message) = &event.msg
                {
                    meta.preview = message.message.clone();
                }
            });
        }
        let outputs = lock(&thread.translator).handle(&event);
        if starts_turn {
            // The translator now tracks the turn the claim stood for.
            *lock(&thread.claimed_turn) = None;
        }
        thread.deliver(outputs).await;
        if starts_turn || ends_turn {
            thread.broadcast_status().await;
        }
        if ends_turn {
            thread.turn_ended.notify_waiters();
        }
    }
    thread.finished.cancel();
}

/// Builds the protocol's thread object; `live` holds a loaded thread's current settings.
pub(crate) fn thread_object(
    id: ConversationId,
    meta: &ThreadMeta,
    live: Option<&keel_protocol::app_server::ThreadSettings>,
    status: ThreadStatus,
    turns: Vec<Turn>,
) -> Thread {
    let parent_thread_id = meta.source.parent_thread_id().map(str::to_string);
    let environments = live.map(|settings| {
        if meta.ephemeral {
            Vec::new()
        } else {
            vec![keel_protocol::app_server::ThreadEnvironment {
                environment_id: meta.environment_id.clone(),
                cwd: settings.cwd.clone(),
                runtime_workspace_roots: vec![settings.cwd.clone()],
            }]
        }
    });
    Thread {
        id: id.to_string(),
        preview: meta.preview.clone(),
        ephemeral: meta.ephemeral,
        model_provider: meta.model_provider.clone(),
        created_at: meta.created_at,
        updated_at: meta.updated_at,
        status,
        path: meta.path.clone(),
        cwd: meta.cwd.clone(),
        cli_version: env!("CARGO_PKG_VERSION").to_string(),
        source: meta.source.clone(),
        name: meta.name.clone(),
        git_info: None,
        agent_nickname: None,
        agent_role: None,
        turns,
        session_id: parent_thread_id.clone().unwrap_or_else(|| id.to_string()),
        forked_from_id: meta.forked_from_id.clone(),
        project_id: None,
        history_mode: "legacy".to_string(),
        model: live
            .map(|settings| settings.model.clone())
            .or_else(|| meta.model.clone()),
        reasoning_effort: live.and_then(|settings| settings.reasoning_effort.clone()),
        recency_at: Some(meta.updated_at),
        parent_thread_id,
        environments,
        section: None,
        section_entered_at: None,
    }
}
