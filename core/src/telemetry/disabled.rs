//! Keel built without the `otel` feature: the telemetry handles exist with the same methods
//! and do nothing. An `[otel]` section with an exporter is reported once.

use std::time::Duration;

use super::{ConversationFacts, DecisionSource, Gauge, RequestOutcome};
use crate::config::OtelSettings;

/// No exporters in this build.
#[derive(Debug, Default)]
pub(crate) struct TelemetryHub {
    warned: std::sync::atomic::AtomicBool,
}

impl TelemetryHub {
    /// Says once that `settings` cannot be honoured in this build.
    pub(crate) fn conversation(
        &self,
        settings: &OtelSettings,
        _facts: impl FnOnce() -> ConversationFacts,
    ) -> Telemetry {
        self.start(settings);
        Telemetry::default()
    }

    /// Nothing is exported in this build.
    pub(crate) fn observe(&self, _gauge: Gauge) {}

    /// Says once that `settings` cannot be honoured in this build.
    pub(crate) fn start(&self, settings: &OtelSettings) {
        if settings.exports_anything()
            && !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                "[otel] is configured, but Keel was built without the `otel` feature: nothing is sent"
            );
        }
    }

    /// Nothing to send.
    pub(crate) async fn shutdown(&self) {}
}

/// A conversation's telemetry: none.
#[derive(Debug, Clone, Default)]
pub(crate) struct Telemetry {
    _none: (),
}

impl Telemetry {
    #[cfg_attr(not(feature = "agent-jobs"), allow(dead_code))]
    pub(crate) fn job_row_ended(&self, _status: &str) {}

    pub(crate) fn turn(&self, _turn_id: &str, _model: &str, _parent: Option<&str>) -> TurnTrace {
        TurnTrace::default()
    }
}

/// A turn's trace: none.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnTrace {
    _none: (),
}

impl TurnTrace {
    pub(crate) fn user_prompt(&self, _input: &[keel_protocol::InputItem]) {}

    pub(crate) fn model_request(&self, _attempt: u64) -> RequestTrace {
        RequestTrace::default()
    }

    pub(crate) fn tool_call(
        &self,
        _tool: &str,
        _call_id: &str,
        _arguments: &str,
        _freeform: bool,
    ) -> ToolTrace {
        ToolTrace::default()
    }

    pub(crate) fn finish(&self, _outcome: &str, _error: Option<&str>) {}
}

/// A model request's trace: none.
#[derive(Debug, Default)]
pub(crate) struct RequestTrace {
    _none: (),
}

impl RequestTrace {
    pub(crate) fn answered(&mut self, _outcome: RequestOutcome) {}

    pub(crate) fn sse_event(&mut self, _kind: &str) {}

    pub(crate) fn completed(
        &mut self,
        _usage: Option<&keel_protocol::TokenUsage>,
        _finish_reason: &'static str,
    ) {
    }

    pub(crate) fn failed(&mut self, _error: &str) {}
}

/// A tool call's trace: none.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolTrace {
    _none: (),
}

impl ToolTrace {
    pub(crate) fn decision(
        &self,
        _decision: keel_protocol::ReviewDecision,
        _source: DecisionSource,
    ) {
    }

    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn mcp_server(&self, _server: &str) {}

    pub(crate) fn mark_failed(&self) {}

    pub(crate) fn traceparent(&self) -> Option<String> {
        None
    }

    pub(crate) fn finish(&self, _output: &str, _elapsed: Duration) {}
}
