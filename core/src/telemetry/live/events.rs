//! Codex's log events (`codex.*`), each with the attributes every record of the conversation
//! carries, linked to the span it happened in.

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry::trace::SpanContext;

use super::pipelines::ConversationTelemetry;

/// What a redacted text is replaced with.
const REDACTED: &str = "[REDACTED]";

/// One event's own attributes.
pub(super) type Attributes = Vec<(&'static str, AnyValue)>;

impl ConversationTelemetry {
    /// Sends log event `name` with `attributes`, in the span `span` when there is one.
    pub(super) fn emit(
        &self,
        name: &'static str,
        span: Option<&SpanContext>,
        attributes: Attributes,
    ) {
        let Some(logger) = self.pipelines().logger() else {
            return;
        };
        let facts = self.facts();
        let now = std::time::SystemTime::now();
        let mut record = logger.create_log_record();
        record.set_event_name(name);
        record.set_timestamp(now);
        record.set_observed_timestamp(now);
        record.set_severity_number(Severity::Info);
        record.set_severity_text("INFO");
        record.set_body(AnyValue::from(name));
        record.add_attribute("event.name", name);
        record.add_attribute(
            "event.timestamp",
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        );
        record.add_attribute("conversation.id", facts.conversation_id.clone());
        record.add_attribute("app.version", env!("CARGO_PKG_VERSION"));
        record.add_attribute("originator", facts.originator.clone());
        record.add_attribute("model", facts.model.clone());
        record.add_attribute("slug", facts.model.clone());
        record.add_attribute("auth_mode", "ApiKey");
        for (key, value) in attributes {
            record.add_attribute(key, value);
        }
        if let Some(span) = span.filter(|span| span.is_valid()) {
            record.set_trace_context(span.trace_id(), span.span_id(), Some(span.trace_flags()));
        }
        logger.emit(record);
    }

    /// `text` when user content may be sent, else the redaction marker.
    pub(super) fn content(&self, text: &str) -> AnyValue {
        if self.pipelines().logs_user_content() {
            AnyValue::from(text.to_string())
        } else {
            AnyValue::from(REDACTED)
        }
    }

    /// `codex.conversation_starts`, and the thread counted.
    pub(super) fn conversation_starts(&self) {
        let facts = self.facts();
        let mut attributes: Attributes = vec![
            ("provider_name", facts.provider.clone().into()),
            ("approval_policy", facts.approval_policy.clone().into()),
            ("sandbox_policy", facts.sandbox_policy.clone().into()),
            ("mcp_servers", facts.mcp_servers.join(", ").into()),
        ];
        if let Some(effort) = &facts.reasoning_effort {
            attributes.push(("reasoning_effort", effort.clone().into()));
        }
        if let Some(window) = facts.context_window {
            attributes.push(("context_window", to_i64(window).into()));
        }
        if let Some(profile) = &facts.profile {
            attributes.push(("active_profile", profile.clone().into()));
        }
        self.emit("codex.conversation_starts", None, attributes);
        if let Some(instruments) = self.pipelines().instruments() {
            instruments.thread_started.add(
                1,
                &[opentelemetry::KeyValue::new(
                    "originator",
                    facts.originator.clone(),
                )],
            );
        }
    }

    /// `codex.user_prompt`: the length always, the text only when allowed.
    pub(super) fn user_prompt(&self, text: &str, span: Option<&SpanContext>) {
        self.emit(
            "codex.user_prompt",
            span,
            vec![
                ("prompt_length", to_i64(text.chars().count()).into()),
                ("prompt", self.content(text)),
            ],
        );
    }
}

/// A count as the signed integer OTLP carries.
pub(super) fn to_i64(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}
