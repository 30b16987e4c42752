//! Telemetry for `[otel]`: Codex-named log events, spans for turns, model requests and tool
//! calls, and metrics, sent over OTLP to the configured collectors.
//!
//! The manager holds a [`TelemetryHub`]; each conversation gets a [`Telemetry`] from it, each
//! turn a [`TurnTrace`], each model request a [`RequestTrace`] and each tool call a
//! [`ToolTrace`]. With nothing configured (or Keel built without the `otel` feature) every
//! one of them is empty and every call on it returns at once: nothing is built, nothing sent.
//! Exporters are built when the first conversation that configures them starts, and shared by
//! every conversation with the same `[otel]` settings.
//!
//! Records are handed to background exporters: a slow or unreachable collector never holds
//! up a turn. [`TelemetryHub::shutdown`] sends what is left, within a bound.

#[cfg(feature = "otel")]
mod live;
#[cfg(feature = "otel")]
pub(crate) use live::{Telemetry, TelemetryHub, ToolTrace, TurnTrace};

#[cfg(not(feature = "otel"))]
#[path = "disabled.rs"]
mod live_disabled;
#[cfg(not(feature = "otel"))]
pub(crate) use live_disabled::{Telemetry, TelemetryHub, ToolTrace, TurnTrace};

/// Who decided whether a tool call runs, as Codex's `codex.tool_decision` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecisionSource {
    /// The approval policy, the sandbox or a hook, without asking anyone.
    Config,
    /// The user, asked.
    User,
}

impl DecisionSource {
    /// The attribute value.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::User => "user",
        }
    }
}

/// The attribute value of a decision (`approved`, `approved_for_session`, `denied`, `abort`).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) fn decision_name(decision: keel_protocol::ReviewDecision) -> &'static str {
    match decision {
        keel_protocol::ReviewDecision::Approved => "approved",
        keel_protocol::ReviewDecision::ApprovedForSession => "approved_for_session",
        keel_protocol::ReviewDecision::Denied => "denied",
        keel_protocol::ReviewDecision::Abort => "abort",
    }
}

/// What `codex.conversation_starts` says of a conversation, and what every record of it
/// carries.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct ConversationFacts {
    /// The conversation's id.
    pub conversation_id: String,
    /// The model it starts with.
    pub model: String,
    /// The provider's id in the configuration.
    pub provider: String,
    /// Who started it (`exec`, `vscode`, `cli`, a sub-agent's parent...).
    pub originator: String,
    /// The reasoning effort asked for, if any.
    pub reasoning_effort: Option<String>,
    /// The context window, when known.
    pub context_window: Option<u64>,
    /// The approval policy, as configured.
    pub approval_policy: String,
    /// The sandbox policy, as configured.
    pub sandbox_policy: String,
    /// The configured MCP servers' names.
    pub mcp_servers: Vec<String>,
    /// The selected profile.
    pub profile: Option<String>,
}

impl ConversationFacts {
    /// The facts of conversation `id` starting with `config`, started by `source`.
    pub(crate) fn of(
        config: &crate::config::Config,
        id: keel_protocol::ConversationId,
        source: &keel_protocol::app_server::SessionSource,
    ) -> Self {
        let text = |value: serde_json::Result<serde_json::Value>| match value {
            Ok(serde_json::Value::String(text)) => text,
            Ok(other) => other.to_string(),
            Err(_) => String::new(),
        };
        let originator = match source {
            keel_protocol::app_server::SessionSource::SubAgent(_) => "subagent".to_string(),
            other => text(serde_json::to_value(other)),
        };
        Self {
            conversation_id: id.to_string(),
            model: config.model.clone(),
            provider: config.model_provider_id.clone(),
            originator,
            reasoning_effort: config
                .model_reasoning_effort
                .as_ref()
                .map(ToString::to_string),
            context_window: config.model_context_window,
            approval_policy: text(serde_json::to_value(config.approval_policy)),
            sandbox_policy: text(serde_json::to_value(config.sandbox_policy.mode())),
            mcp_servers: config.mcp_servers.keys().cloned().collect(),
            profile: config.active_profile.clone(),
        }
    }
}

/// How a model request went, for `codex.api_request` and its span.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct RequestOutcome {
    /// The HTTP status, when the provider answered.
    pub status: Option<u16>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// A value the program reports, read at each metrics export.
#[derive(Clone)]
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Gauge {
    /// The metric's name.
    pub name: &'static str,
    /// What it counts.
    pub description: &'static str,
    /// Reads the value; runs on the exporter's thread.
    pub read: std::sync::Arc<dyn Fn() -> u64 + Send + Sync>,
}
