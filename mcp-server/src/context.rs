//! State shared by the processor and every tool-call task: the engine, the server's settings,
//! what the client can do, and which calls are running.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use keel_core::{Config, ConfigOverrides, Conversation, ConversationManager};
use keel_protocol::mcp::{CodexEventMeta, CodexEventNotificationParams, CodexSessionSettings};

use crate::methods::mcp_server_notification;
use keel_protocol::{ConversationId, Event, RequestId};
use serde_json::Value;

use crate::outgoing::OutgoingSender;
use crate::streamed_conversation::StreamedConversation;
use crate::sub_agent_calls::SubAgentCalls;

/// Settings fixed for the server's lifetime.
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    /// Where `config.toml` and rollouts live.
    pub(crate) keel_home: PathBuf,
    /// `-c key=value` overrides from the command line, applied to every session.
    pub(crate) cli_overrides: Vec<(String, toml::Value)>,
}

impl ServerSettings {
    /// Resolves a session's configuration: `config.toml`, then the server's `-c` overrides,
    /// then the tool call's `config` object, then its typed settings.
    pub(crate) fn load_config(&self, settings: &CodexSessionSettings) -> Result<Config, String> {
        let mut overrides = self.cli_overrides.clone();
        if let Some(config) = &settings.config {
            for (key, value) in config {
                let value = json_to_toml(value)
                    .ok_or_else(|| format!("config override `{key}`: null is not a TOML value"))?;
                overrides.push((key.clone(), value));
            }
        }
        if let Some(prompt) = &settings.compact_prompt {
            overrides.push((
                "compact_prompt".to_string(),
                toml::Value::String(prompt.clone()),
            ));
        }
        let typed = ConfigOverrides {
            model: settings.model.clone(),
            config_profile: settings.profile.clone(),
            cwd: settings.cwd.clone(),
            approval_policy: settings.approval_policy,
            sandbox_mode: settings.sandbox,
            base_instructions: settings.base_instructions.clone(),
            developer_instructions: settings.developer_instructions.clone(),
            ..ConfigOverrides::default()
        };
        Config::load(&self.keel_home, overrides, typed).map_err(|err| err.to_string())
    }
}

/// Converts a JSON override value to TOML; `None` for `null`, which TOML cannot express.
fn json_to_toml(value: &Value) -> Option<toml::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64()?),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => {
            toml::Value::Array(items.iter().map(json_to_toml).collect::<Option<_>>()?)
        }
        Value::Object(map) => toml::Value::Table(
            map.iter()
                .map(|(key, value)| Some((key.clone(), json_to_toml(value)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// A running `tools/call` that `notifications/cancelled` can stop.
#[derive(Clone)]
pub(crate) enum RunningCall {
    /// A `codex` / `codex-reply` turn: cancelling interrupts it.
    Turn(Arc<Conversation>),
    /// A `conversationStream` call: cancelling ends the stream, buffering goes on.
    Stream(ConversationId),
}

/// Where a tracked `tools/call` stands. A call is tracked from the moment the processor
/// reads it, so a cancellation that arrives before the call has anything to stop is kept
/// and applied when it gets there ([`ServerContext::mark_running`]).
enum CallState {
    /// Setting up (loading configuration, starting the session); `cancelled` once a
    /// `notifications/cancelled` for it has arrived.
    Starting { cancelled: bool },
    /// Running something a cancellation can stop.
    Running(RunningCall),
}

/// What to do with a `notifications/cancelled`.
pub(crate) enum CancelTarget {
    /// Stop this running call now.
    Running(RunningCall),
    /// The call is still starting: the cancellation was recorded and the call stops itself
    /// when it reaches [`ServerContext::mark_running`].
    Deferred,
    /// No such call (finished, never made, or not a tool call).
    Unknown,
}

/// A cancellation arrived while the call was starting: it should stop instead of running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CancelledEarly;

/// Shared server state.
pub(crate) struct ServerContext {
    pub(crate) outgoing: OutgoingSender,
    pub(crate) manager: ConversationManager,
    pub(crate) settings: ServerSettings,
    /// Whether the client declared `elicitation`; set once by `initialize`.
    elicitation: OnceLock<bool>,
    calls: Mutex<HashMap<RequestId, CallState>>,
    busy_threads: Mutex<HashSet<ConversationId>>,
    /// Conversations driven by the streaming tools, which own their event loops.
    pub(crate) streams: tokio::sync::Mutex<HashMap<ConversationId, StreamedConversation>>,
    /// The `tools/call` each live sub-agent's events go out under.
    pub(crate) sub_agents: SubAgentCalls,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a single map operation, so a poisoned map is still valid.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ServerContext {
    pub(crate) fn new(outgoing: OutgoingSender, settings: ServerSettings) -> Self {
        Self {
            outgoing,
            manager: ConversationManager::new(),
            settings,
            elicitation: OnceLock::new(),
            calls: Mutex::new(HashMap::new()),
            busy_threads: Mutex::new(HashSet::new()),
            streams: tokio::sync::Mutex::new(HashMap::new()),
            sub_agents: SubAgentCalls::default(),
        }
    }

    /// The `codex`/`codex-reply` call running a turn of thread `id`, if one is.
    pub(crate) fn call_running_thread(&self, id: ConversationId) -> Option<RequestId> {
        lock(&self.calls)
            .iter()
            .find_map(|(call, state)| match state {
                CallState::Running(RunningCall::Turn(conversation)) if conversation.id() == id => {
                    Some(call.clone())
                }
                _ => None,
            })
    }

    /// Records what the client declared in `initialize`.
    pub(crate) fn set_client_elicitation(&self, supported: bool) {
        if self.elicitation.set(supported).is_err() {
            tracing::debug!("client capabilities were already recorded");
        }
    }

    /// Whether approval requests may be sent to the client as elicitations.
    pub(crate) fn client_supports_elicitation(&self) -> bool {
        self.elicitation.get().copied().unwrap_or(false)
    }

    /// Sends one engine event as `codex/event`.
    pub(crate) async fn send_event(&self, meta: &CodexEventMeta, event: Event) {
        send_event(&self.outgoing, meta, event).await;
    }

    /// Tracks `tools/call` `id` until the guard drops. The processor calls it before it
    /// reads the next message, so cancellations for the call are never lost.
    pub(crate) fn track_call(self: &Arc<Self>, id: RequestId) -> CallGuard {
        let previous =
            lock(&self.calls).insert(id.clone(), CallState::Starting { cancelled: false });
        if previous.is_some() {
            tracing::warn!(%id, "a tools/call reuses the id of a running call; cancellations reach the newer one");
        }
        CallGuard {
            context: Arc::clone(self),
            id,
        }
    }

    /// Records what call `id` now runs, so a cancellation can stop it; `Err` when a
    /// cancellation arrived while it was starting, in which case the call should end as
    /// cancelled instead.
    pub(crate) fn mark_running(
        &self,
        id: &RequestId,
        call: RunningCall,
    ) -> Result<(), CancelledEarly> {
        let mut calls = lock(&self.calls);
        match calls.get_mut(id) {
            Some(CallState::Starting { cancelled: true }) => Err(CancelledEarly),
            Some(state) => {
                *state = CallState::Running(call);
                Ok(())
            }
            None => {
                // Every call is tracked before it starts; nothing could cancel this one.
                tracing::debug!(%id, "mark_running for an untracked call");
                Ok(())
            }
        }
    }

    /// Whether a cancellation for call `id` arrived while it was starting, so it should not
    /// start its work at all.
    pub(crate) fn cancelled_while_starting(&self, id: &RequestId) -> bool {
        matches!(
            lock(&self.calls).get(id),
            Some(CallState::Starting { cancelled: true })
        )
    }

    /// Applies `notifications/cancelled` for `id` to the call table; the caller stops the
    /// returned running call.
    pub(crate) fn cancel_call(&self, id: &RequestId) -> CancelTarget {
        match lock(&self.calls).get_mut(id) {
            Some(CallState::Running(call)) => CancelTarget::Running(call.clone()),
            Some(CallState::Starting { cancelled }) => {
                *cancelled = true;
                CancelTarget::Deferred
            }
            None => CancelTarget::Unknown,
        }
    }

    /// Marks a thread as running a `codex`/`codex-reply` call until the guard drops; `None`
    /// when one is running already (two readers would split its events).
    pub(crate) fn claim_thread(self: &Arc<Self>, id: ConversationId) -> Option<ThreadGuard> {
        lock(&self.busy_threads).insert(id).then(|| ThreadGuard {
            context: Arc::clone(self),
            id,
        })
    }
}

/// Sends one engine event as `codex/event` through `outgoing`.
pub(crate) async fn send_event(outgoing: &OutgoingSender, meta: &CodexEventMeta, event: Event) {
    let params = CodexEventNotificationParams {
        meta: meta.clone(),
        event,
    };
    outgoing
        .send_notification::<mcp_server_notification::CodexEvent>(&params)
        .await;
}

/// Stops tracking a tool call when dropped; drop it before answering the call, so a late
/// cancellation cannot reach whatever the thread runs next.
pub(crate) struct CallGuard {
    context: Arc<ServerContext>,
    id: RequestId,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        lock(&self.context.calls).remove(&self.id);
    }
}

/// Frees a thread for the next call when dropped.
pub(crate) struct ThreadGuard {
    context: Arc<ServerContext>,
    id: ConversationId,
}

impl Drop for ThreadGuard {
    fn drop(&mut self) {
        lock(&self.context.busy_threads).remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn json_overrides_become_toml() {
        let value = serde_json::json!({"a": 1, "b": [true, "x"], "c": 1.5});
        let expected: toml::Value =
            toml::from_str::<toml::Table>("a = 1\nb = [true, \"x\"]\nc = 1.5")
                .map(toml::Value::Table)
                .unwrap_or(toml::Value::Boolean(false));
        assert_eq!(json_to_toml(&value), Some(expected));
        assert_eq!(json_to_toml(&Value::Null), None);
    }
}
