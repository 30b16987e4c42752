//! Loaded threads: each wraps one engine conversation, pumps its events through the
//! translator to every subscribed connection, and carries approvals out as server requests.

mod history;
mod items;
mod translate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::select_all;
use keel_core::Conversation;
use keel_protocol::app_server::{
    CommandExecutionApprovalDecision, CommandExecutionRequestApprovalResponse, ServerNotification,
    ServerRequest, ServerRequestResolvedNotification, Thread, ThreadActiveFlag, ThreadSettings,
    ThreadStatus, ThreadStatusChangedNotification, Turn, UserInput,
};
use keel_protocol::{CallId, ConversationId, EventMsg, Op, RequestId, ReviewDecision};
use tokio::task::JoinHandle;

pub(crate) use history::turns_from_events;
use translate::{Output, Translator};

use crate::outgoing::{ConnectionId, Outgoing};

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
}

/// An approval waiting on the client.
struct PendingApproval {
    requests: Vec<(Arc<Outgoing>, RequestId)>,
    task: JoinHandle<()>,
}

/// A thread loaded in this server.
pub(crate) struct LoadedThread {
    pub id: ConversationId,
    pub conversation: Arc<Conversation>,
    pub settings: ThreadSettings,
    meta: Mutex<ThreadMeta>,
    subscribers: Mutex<HashMap<ConnectionId, Arc<Outgoing>>>,
    translator: Mutex<Translator>,
    approvals: Mutex<HashMap<CallId, PendingApproval>>,
    /// A turn accepted by `turn/start` whose `task_started` has not arrived yet.
    claimed_turn: Mutex<Option<String>>,
    pump: Mutex<Option<JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LoadedThread {
    /// Wraps a conversation and starts pumping its events.
    pub(crate) fn start(
        conversation: Arc<Conversation>,
        settings: ThreadSettings,
        meta: ThreadMeta,
        turns: Vec<Turn>,
    ) -> Arc<Self> {
        let id = conversation.id();
        let thread = Arc::new(Self {
            id,
            conversation,
            settings,
            meta: Mutex::new(meta),
            subscribers: Mutex::new(HashMap::new()),
            translator: Mutex::new(Translator::new(id.to_string(), turns)),
            approvals: Mutex::new(HashMap::new()),
            claimed_turn: Mutex::new(None),
            pump: Mutex::new(None),
        });
        let pump = tokio::spawn(pump_events(thread.clone()));
        *lock(&thread.pump) = Some(pump);
        thread
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

    /// The running turn, or the one `turn/start` accepted and the engine has not started yet.
    pub(crate) fn active_turn_id(&self) -> Option<String> {
        lock(&self.translator)
            .active_turn_id()
            .map(str::to_string)
            .or_else(|| lock(&self.claimed_turn).clone())
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

    pub(crate) fn turns(&self) -> Vec<Turn> {
        lock(&self.translator).all_turns()
    }

    /// Replaces the finished turns (after a rollback).
    pub(crate) fn set_turns(&self, turns: Vec<Turn>) {
        lock(&self.translator).turns = turns;
    }

    /// The thread as the protocol shows it.
    pub(crate) fn to_thread(&self, include_turns: bool) -> Thread {
        let meta = self.meta();
        thread_object(
            self.id,
            &meta,
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
                self.broadcast(notification).await;
            }
        }
    }

    pub(crate) async fn broadcast(&self, notification: ServerNotification) {
        let subscribers: Vec<Arc<Outgoing>> = lock(&self.subscribers).values().cloned().collect();
        for subscriber in subscribers {
            subscriber.notify(notification.clone()).await;
        }
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
                Output::Notify(notification) => self.broadcast(notification).await,
                Output::Approval {
                    call_id,
                    is_patch,
                    request,
                } => {
                    self.ask(call_id, is_patch, request).await;
                }
            }
        }
    }

    /// Sends an approval request to every subscriber; the first answer goes to the engine.
    async fn ask(self: &Arc<Self>, call_id: CallId, is_patch: bool, request: ServerRequest) {
        let subscribers: Vec<Arc<Outgoing>> = lock(&self.subscribers).values().cloned().collect();
        let mut sent = Vec::new();
        for subscriber in subscribers {
            if let Some((id, rx)) = subscriber.request(request.clone()).await {
                sent.push((subscriber, id, rx));
            }
        }
        if sent.is_empty() {
            tracing::warn!(thread = %self.id, %call_id, "no client to ask for approval; declining");
            self.settle(call_id, is_patch, ReviewDecision::Denied).await;
            return;
        }
        let requests: Vec<(Arc<Outgoing>, RequestId)> = sent
            .iter()
            .map(|(o, id, _)| (o.clone(), id.clone()))
            .collect();
        let receivers: Vec<_> = sent.into_iter().map(|(_, _, rx)| rx).collect();
        let thread = self.clone();
        let task_call = call_id.clone();
        // Held until the approval is registered: an answer that is already waiting must find
        // it (and remove it), or a stale entry would keep the thread "waiting on approval" and
        // be withdrawn later although it was answered.
        {
            let mut approvals = lock(&self.approvals);
            let task = tokio::spawn(async move {
                let (answer, _, _) = select_all(receivers).await;
                let decision = match answer {
                    Ok(Ok(value)) => {
                        match serde_json::from_value::<CommandExecutionRequestApprovalResponse>(
                            value,
                        ) {
                            Ok(response) => response.decision,
                            Err(err) => {
                                tracing::warn!("unreadable approval answer ({err}); declining");
                                CommandExecutionApprovalDecision::Decline
                            }
                        }
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(
                            "client answered the approval with an error ({error}); declining"
                        );
                        CommandExecutionApprovalDecision::Decline
                    }
                    Err(_) => CommandExecutionApprovalDecision::Decline,
                };
                let others = lock(&thread.approvals).remove(&task_call);
                if let Some(pending) = others {
                    for (outgoing, id) in pending.requests {
                        outgoing.forget(&id);
                    }
                }
                thread.settle(task_call, is_patch, decision.into()).await;
            });
            approvals.insert(call_id, PendingApproval { requests, task });
        }
        self.broadcast_status().await;
    }

    /// Gives the engine the decision, and marks declined items.
    async fn settle(&self, call_id: CallId, is_patch: bool, decision: ReviewDecision) {
        let op = if is_patch {
            Op::PatchApproval {
                id: call_id.clone(),
                decision,
            }
        } else {
            Op::ExecApproval {
                id: call_id.clone(),
                decision,
            }
        };
        if let Err(err) = self.conversation.submit(op).await {
            tracing::warn!(thread = %self.id, "cannot deliver approval: {err}");
        }
        if matches!(decision, ReviewDecision::Denied | ReviewDecision::Abort) {
            let outputs = lock(&self.translator).declined(&call_id);
            self.notify_all(outputs).await;
        }
        self.broadcast_status().await;
    }

    /// Approvals still pending when their turn ends are withdrawn from the clients.
    async fn withdraw_approvals(&self) {
        let pending: Vec<PendingApproval> = lock(&self.approvals).drain().map(|(_, p)| p).collect();
        for approval in pending {
            approval.task.abort();
            for (outgoing, request_id) in approval.requests {
                outgoing.forget(&request_id);
                outgoing
                    .notify(ServerNotification::ServerRequestResolved(
                        ServerRequestResolvedNotification {
                            thread_id: self.id.to_string(),
                            request_id,
                        },
                    ))
                    .await;
            }
        }
    }

    /// Stops the pump and pending approvals (the conversation shuts down when dropped).
    pub(crate) fn close(&self) {
        if let Some(pump) = lock(&self.pump).take() {
            pump.abort();
        }
        for (_, approval) in lock(&self.approvals).drain() {
            approval.task.abort();
        }
    }
}

/// Reads the conversation's events until it shuts down.
async fn pump_events(thread: Arc<LoadedThread>) {
    while let Ok(event) = thread.conversation.next_event().await {
        let ends_turn = matches!(
            event.msg,
            EventMsg::TaskComplete(_) | EventMsg::TurnAborted(_) | EventMsg::Error(_)
        );
        let starts_turn = matches!(event.msg, EventMsg::TaskStarted(_));
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
    }
}

/// Builds the protocol's thread object.
pub(crate) fn thread_object(
    id: ConversationId,
    meta: &ThreadMeta,
    status: ThreadStatus,
    turns: Vec<Turn>,
) -> Thread {
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
        source: Default::default(),
        name: meta.name.clone(),
        git_info: None,
        agent_nickname: None,
        agent_role: None,
        turns,
    }
}
