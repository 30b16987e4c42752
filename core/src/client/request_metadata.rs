//! Who a model request is for, told to a Responses provider as Codex 0.171 tells it: the
//! `client_metadata` field of the body and the `session-id`, `thread-id`, `x-codex-window-id`
//! and `x-codex-turn-metadata` headers. Providers group requests by them (caching, analytics,
//! abuse checks), so a request from Keel carries the same facts a request from Codex does.

use serde::Serialize;
use serde_json::{Value, json};

/// The facts of one request that name its installation, thread, turn and context window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMetadata {
    /// This home's installation id (`KEEL_HOME/installation_id`), if it could be read or made.
    pub installation_id: Option<String>,
    /// The conversation the request belongs to.
    pub thread_id: String,
    /// The session the provider caches by: the tree's top-level conversation (the thread
    /// itself for a top-level thread).
    pub session_id: String,
    /// For a sub-agent: the conversation and turn that spawned it.
    pub parent: Option<(String, Option<String>)>,
    /// The turn the request belongs to.
    pub turn_id: String,
    /// The turn of the top-level thread that led to this one (the same turn for a top-level
    /// thread; the spawning turn's root for a sub-agent).
    pub root_turn_id: String,
    /// How many times this conversation's context was compacted in this process; each
    /// compaction opens a new context window.
    pub window_number: u64,
    /// A unique id of that context window.
    pub context_window_id: String,
    /// `new` for a conversation started empty, `resumed` for one that started from history,
    /// `warm_fork` for a sub-agent that started from its parent's.
    pub history_initialization: &'static str,
    /// The agent's task path: `/root` for a top-level thread, `/root/<task>` below it.
    pub agent_name: String,
    /// `turn` for a turn's own requests, `compaction` for a summary request.
    pub request_kind: &'static str,
    /// What started the turn: `exec`, `app_server`, `subagent`, …
    pub turn_trigger: String,
    /// The sandbox the turn's commands run under, in config-file spelling.
    pub sandbox_mode: String,
    /// The model asked.
    pub model: String,
    /// The reasoning effort asked, as requested (`ultra` stays `ultra` here).
    pub reasoning_effort: Option<String>,
    /// When the turn started, in milliseconds since the Unix epoch.
    pub turn_started_at_unix_ms: i64,
}

/// The turn metadata, as the JSON object Codex sends in a header and in `client_metadata`.
#[derive(Serialize)]
struct TurnMetadata<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    installation_id: Option<&'a str>,
    session_id: &'a str,
    thread_id: &'a str,
    agent_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_thread_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_turn_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent_kind: Option<&'a str>,
    turn_id: &'a str,
    window_id: &'a str,
    window_number: u64,
    context_window_id: &'a str,
    request_kind: &'a str,
    history_initialization: &'a str,
    root_turn_id: &'a str,
    thread_source: &'a str,
    turn_trigger: &'a str,
    sandbox: &'a str,
    sandbox_mode: &'a str,
    /// Keel has no automatic approval reviewer.
    auto_review_enabled: bool,
    /// Keel has no Node REPL tool.
    node_repl_auto_review_required: bool,
    node_repl_disabled: bool,
    turn_started_at_unix_ms: i64,
    /// Keel sends no analytics of its own.
    analytics_enabled: bool,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
}

impl RequestMetadata {
    /// `<thread>:<window number>`, the id of the context window the request fills.
    pub fn window_id(&self) -> String {
        format!("{}:{}", self.thread_id, self.window_number)
    }

    /// The `x-codex-turn-metadata` header's JSON text.
    pub fn turn_metadata(&self) -> String {
        let window_id = self.window_id();
        let metadata = TurnMetadata {
            installation_id: self.installation_id.as_deref(),
            session_id: &self.session_id,
            thread_id: &self.thread_id,
            agent_name: &self.agent_name,
            parent_thread_id: self.parent.as_ref().map(|(thread, _)| thread.as_str()),
            parent_turn_id: self.parent.as_ref().and_then(|(_, turn)| turn.as_deref()),
            subagent_kind: self.parent.as_ref().map(|_| "thread_spawn"),
            turn_id: &self.turn_id,
            window_id: &window_id,
            window_number: self.window_number,
            context_window_id: &self.context_window_id,
            request_kind: self.request_kind,
            history_initialization: self.history_initialization,
            root_turn_id: &self.root_turn_id,
            thread_source: if self.agent_name == ROOT_AGENT {
                "user"
            } else {
                "subagent"
            },
            turn_trigger: &self.turn_trigger,
            sandbox: if self.sandbox_mode == "danger-full-access" {
                "none"
            } else {
                "sandboxed"
            },
            sandbox_mode: &self.sandbox_mode,
            auto_review_enabled: false,
            node_repl_auto_review_required: false,
            node_repl_disabled: true,
            turn_started_at_unix_ms: self.turn_started_at_unix_ms,
            analytics_enabled: false,
            model: &self.model,
            reasoning_effort: self.reasoning_effort.as_deref(),
        };
        serde_json::to_string(&metadata).unwrap_or_default()
    }

    /// The body's `client_metadata` object.
    pub fn client_metadata(&self) -> Value {
        let mut object = json!({
            "thread_id": self.thread_id,
            "turn_id": self.turn_id,
            "root_turn_id": self.root_turn_id,
            "session_id": self.session_id,
            "x-codex-window-id": self.window_id(),
            "x-codex-turn-metadata": self.turn_metadata(),
        });
        if let Some(id) = &self.installation_id {
            object["x-codex-installation-id"] = json!(id);
        }
        if let Some((thread, turn)) = &self.parent {
            object["x-codex-parent-thread-id"] = json!(thread);
            object["x-openai-subagent"] = json!(SUBAGENT);
            if let Some(turn) = turn {
                object["parent_turn_id"] = json!(turn);
            }
        }
        object
    }

    /// The headers Codex sends beside the body: name and value.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("session-id", self.session_id.clone()),
            ("thread-id", self.thread_id.clone()),
            ("x-codex-window-id", self.window_id()),
            ("x-codex-turn-metadata", self.turn_metadata()),
        ];
        if let Some((thread, _)) = &self.parent {
            headers.push(("x-openai-subagent", SUBAGENT.to_string()));
            headers.push(("x-codex-parent-thread-id", thread.clone()));
        }
        headers
    }
}

/// What a spawned agent's requests say they are (`x-openai-subagent`).
const SUBAGENT: &str = "collab_spawn";

/// The task path of a top-level thread.
pub const ROOT_AGENT: &str = "/root";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_metadata_names_the_window_and_the_agent() {
        let metadata = RequestMetadata {
            installation_id: Some("install".into()),
            thread_id: "thread".into(),
            session_id: "thread".into(),
            parent: None,
            turn_id: "turn".into(),
            root_turn_id: "turn".into(),
            window_number: 2,
            context_window_id: "window".into(),
            history_initialization: "new",
            agent_name: ROOT_AGENT.into(),
            request_kind: "turn",
            turn_trigger: "exec".into(),
            sandbox_mode: "workspace-write".into(),
            model: "gpt-6.2-sol".into(),
            reasoning_effort: Some("ultra".into()),
            turn_started_at_unix_ms: 5,
        };
        let parsed: Value = serde_json::from_str(&metadata.turn_metadata()).unwrap();
        assert_eq!(parsed["window_id"], "thread:2");
        assert_eq!(parsed["thread_source"], "user");
        assert_eq!(parsed["sandbox"], "sandboxed");
        assert_eq!(parsed["reasoning_effort"], "ultra");
        let body = metadata.client_metadata();
        assert_eq!(body["x-codex-installation-id"], "install");
        assert_eq!(body["x-codex-window-id"], "thread:2");
        assert_eq!(body["x-codex-turn-metadata"], metadata.turn_metadata());
    }
}
