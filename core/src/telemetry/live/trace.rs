//! A turn's trace: its span (GenAI's `invoke_agent`), a span per model request (`chat`) and
//! per tool call (`execute_tool`), the log events that happen in them and the metrics they
//! end with.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt as _, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::Span;

use super::events::to_i64;
use super::pipelines::ConversationTelemetry;
use crate::telemetry::{DecisionSource, RequestOutcome, decision_name};

/// `Debug` for a handle that is empty without telemetry: it says whether it traces.
macro_rules! debug_as_present {
    ($handle:ident) => {
        impl std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($handle))
                    .field(&self.0.is_some())
                    .finish()
            }
        }
    };
}

/// The W3C header a trace context travels in.
const TRACEPARENT: &str = "traceparent";

/// A span that is ended once, by whoever finishes first (a drop ends it too).
struct OpenSpan(Mutex<Option<Span>>);

impl OpenSpan {
    fn new(span: Option<Span>) -> Self {
        Self(Mutex::new(span))
    }

    fn with(&self, f: impl FnOnce(&mut Span)) {
        if let Ok(mut span) = self.0.lock()
            && let Some(span) = span.as_mut()
        {
            f(span);
        }
    }

    fn end(&self, status: Status) {
        if let Ok(mut span) = self.0.lock()
            && let Some(mut span) = span.take()
        {
            span.set_status(status);
            span.end();
        }
    }
}

/// The span context as a W3C `traceparent`.
fn traceparent_of(context: &SpanContext) -> Option<String> {
    context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
    })
}

/// The context a W3C `traceparent` names (an empty one when it names nothing valid).
fn remote_parent(traceparent: Option<&str>) -> Context {
    match traceparent {
        Some(header) => {
            let carrier = HashMap::from([(TRACEPARENT.to_string(), header.to_string())]);
            TraceContextPropagator::new().extract(&carrier)
        }
        None => Context::new(),
    }
}

/// A span's context; an empty one without a span (traces not exported).
fn context_of(span: Option<&Span>) -> SpanContext {
    span.map_or_else(SpanContext::empty_context, |span| {
        span.span_context().clone()
    })
}

fn parent_of(context: &SpanContext) -> Context {
    Context::new().with_remote_span_context(context.clone())
}

/// GenAI's token counts on a span.
fn set_usage(span: &mut Span, usage: &keel_protocol::TokenUsage) {
    span.set_attribute(KeyValue::new(
        "gen_ai.usage.input_tokens",
        to_i64(usage.input_tokens),
    ));
    span.set_attribute(KeyValue::new(
        "gen_ai.usage.output_tokens",
        to_i64(usage.output_tokens),
    ));
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A turn's trace; empty when nothing is configured.
#[derive(Clone, Default)]
pub(crate) struct TurnTrace(Option<Arc<TurnInner>>);

debug_as_present!(TurnTrace);

struct TurnInner {
    conversation: Arc<ConversationTelemetry>,
    span: OpenSpan,
    context: SpanContext,
    model: String,
    started: Instant,
    first_output: OnceLock<Duration>,
    tokens: Mutex<keel_protocol::TokenUsage>,
}

impl TurnTrace {
    pub(super) fn start(
        conversation: Arc<ConversationTelemetry>,
        turn_id: &str,
        model: &str,
        parent: Option<&str>,
    ) -> Self {
        let span = conversation.pipelines().tracer().map(|tracer| {
            tracer
                .span_builder("invoke_agent keel")
                .with_kind(SpanKind::Internal)
                .with_attributes([
                    KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                    KeyValue::new("gen_ai.agent.name", "keel"),
                    KeyValue::new(
                        "gen_ai.conversation.id",
                        conversation.facts().conversation_id.clone(),
                    ),
                    KeyValue::new("gen_ai.request.model", model.to_string()),
                    KeyValue::new("keel.turn.id", turn_id.to_string()),
                ])
                .start_with_context(tracer, &remote_parent(parent))
        });
        let context = context_of(span.as_ref());
        Self(Some(Arc::new(TurnInner {
            conversation,
            span: OpenSpan::new(span),
            context,
            model: model.to_string(),
            started: Instant::now(),
            first_output: OnceLock::new(),
            tokens: Mutex::new(keel_protocol::TokenUsage::default()),
        })))
    }

    /// `codex.user_prompt` for the user's `input` (its text; images left out), in this
    /// turn's span.
    pub(crate) fn user_prompt(&self, input: &[keel_protocol::InputItem]) {
        if let Some(turn) = &self.0 {
            let text = input
                .iter()
                .filter_map(|item| match item {
                    keel_protocol::InputItem::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            turn.conversation.user_prompt(&text, Some(&turn.context));
        }
    }

    /// The trace of the turn's next model request (`attempt` counts from 1).
    pub(crate) fn model_request(&self, attempt: u64) -> RequestTrace {
        let Some(turn) = &self.0 else {
            return RequestTrace::default();
        };
        let facts = turn.conversation.facts();
        let span = turn.conversation.pipelines().tracer().map(|tracer| {
            tracer
                .span_builder(format!("chat {}", turn.model))
                .with_kind(SpanKind::Client)
                .with_attributes([
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.provider.name", facts.provider.clone()),
                    KeyValue::new("gen_ai.request.model", turn.model.clone()),
                    KeyValue::new("gen_ai.conversation.id", facts.conversation_id.clone()),
                    KeyValue::new("keel.attempt", to_i64(attempt)),
                ])
                .start_with_context(tracer, &parent_of(&turn.context))
        });
        RequestTrace(Some(RequestInner {
            turn: turn.clone(),
            context: context_of(span.as_ref()),
            span: OpenSpan::new(span),
            attempt,
            started: Instant::now(),
            first_output: None,
        }))
    }

    /// The trace of one tool call of the turn (`freeform`: a custom tool taking raw text).
    pub(crate) fn tool_call(
        &self,
        tool: &str,
        call_id: &str,
        arguments: &str,
        freeform: bool,
    ) -> ToolTrace {
        let Some(turn) = &self.0 else {
            return ToolTrace::default();
        };
        let span = turn.conversation.pipelines().tracer().map(|tracer| {
            tracer
                .span_builder(format!("execute_tool {tool}"))
                .with_kind(SpanKind::Internal)
                .with_attributes([
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", tool.to_string()),
                    KeyValue::new("gen_ai.tool.call.id", call_id.to_string()),
                    KeyValue::new("gen_ai.tool.type", "function"),
                    KeyValue::new(
                        "keel.tool.kind",
                        if freeform { "freeform" } else { "function" },
                    ),
                ])
                .start_with_context(tracer, &parent_of(&turn.context))
        });
        ToolTrace(Some(Arc::new(ToolInner {
            turn: turn.clone(),
            context: context_of(span.as_ref()),
            span: OpenSpan::new(span),
            tool: tool.to_string(),
            call_id: call_id.to_string(),
            arguments: arguments.to_string(),
            failed: AtomicBool::new(false),
            mcp_server: OnceLock::new(),
        })))
    }

    /// Ends the turn: `outcome` is `completed`, `interrupted` or `failed` (with `error`).
    pub(crate) fn finish(&self, outcome: &str, error: Option<&str>) {
        let Some(turn) = &self.0 else {
            return;
        };
        let elapsed = turn.started.elapsed();
        let tokens = turn.tokens.lock().map(|tokens| *tokens).unwrap_or_default();
        turn.span.with(|span| {
            span.set_attribute(KeyValue::new("keel.turn.outcome", outcome.to_string()));
            set_usage(span, &tokens);
        });
        turn.span.end(match error {
            Some(error) => Status::error(error.to_string()),
            None => Status::Ok,
        });
        if let Some(instruments) = turn.conversation.pipelines().instruments() {
            let model = KeyValue::new("model", turn.model.clone());
            instruments.turns.add(
                1,
                &[model.clone(), KeyValue::new("outcome", outcome.to_string())],
            );
            instruments
                .turn_duration
                .record(millis(elapsed), std::slice::from_ref(&model));
            if let Some(first) = turn.first_output.get() {
                instruments
                    .turn_ttft
                    .record(millis(*first), std::slice::from_ref(&model));
            }
            for (token_type, count) in [
                ("input", tokens.input_tokens),
                ("cached_input", tokens.cached_input_tokens),
                ("output", tokens.output_tokens),
                ("reasoning_output", tokens.reasoning_output_tokens),
                ("total", tokens.total_tokens),
            ] {
                instruments.turn_tokens.record(
                    count,
                    &[model.clone(), KeyValue::new("token_type", token_type)],
                );
            }
        }
    }
}

/// A model request's trace; empty when nothing is configured.
#[derive(Default)]
pub(crate) struct RequestTrace(Option<RequestInner>);

debug_as_present!(RequestTrace);

struct RequestInner {
    turn: Arc<TurnInner>,
    span: OpenSpan,
    context: SpanContext,
    attempt: u64,
    started: Instant,
    first_output: Option<Duration>,
}

impl RequestTrace {
    /// `codex.api_request`: the provider answered (or the request failed before it did).
    pub(crate) fn answered(&mut self, outcome: RequestOutcome) {
        let Some(request) = &self.0 else {
            return;
        };
        let elapsed = request.started.elapsed();
        let conversation = &request.turn.conversation;
        let mut attributes: super::events::Attributes = vec![
            ("attempt", to_i64(request.attempt).into()),
            ("duration_ms", to_i64(elapsed.as_millis()).into()),
        ];
        if let Some(status) = outcome.status {
            attributes.push(("http.response.status_code", i64::from(status).into()));
            request.span.with(|span| {
                span.set_attribute(KeyValue::new(
                    "http.response.status_code",
                    i64::from(status),
                ));
            });
        }
        if let Some(error) = &outcome.error {
            attributes.push(("error.message", error.clone().into()));
        }
        conversation.emit("codex.api_request", Some(&request.context), attributes);
        if let Some(instruments) = conversation.pipelines().instruments() {
            let status = outcome
                .status
                .map_or_else(|| "none".to_string(), |status| status.to_string());
            let labels = [
                KeyValue::new("status", status),
                KeyValue::new("success", outcome.error.is_none()),
            ];
            instruments.api_requests.add(1, &labels);
            instruments.api_duration.record(millis(elapsed), &labels);
        }
        if let Some(error) = outcome.error {
            request.span.end(Status::error(error));
        }
    }

    /// `codex.sse_event` for one event of the response stream (`kind` as the Responses API
    /// names it); the first output marks the time to first token.
    pub(crate) fn sse_event(&mut self, kind: &'static str) {
        let Some(request) = &mut self.0 else {
            return;
        };
        let elapsed = request.started.elapsed();
        if kind != "response.created" && request.first_output.is_none() {
            request.first_output = Some(elapsed);
            let _ = request
                .turn
                .first_output
                .set(request.turn.started.elapsed());
            request.span.with(|span| {
                span.set_attribute(KeyValue::new(
                    "gen_ai.response.time_to_first_chunk",
                    elapsed.as_secs_f64(),
                ));
            });
        }
        request.turn.conversation.emit(
            "codex.sse_event",
            Some(&request.context),
            vec![
                ("event.kind", kind.into()),
                ("duration_ms", to_i64(elapsed.as_millis()).into()),
            ],
        );
    }

    /// `codex.sse_event` for `response.completed`, with the tokens used and why the model
    /// stopped (`stop`, or `tool_calls` when it called tools); ends the span.
    pub(crate) fn completed(
        &mut self,
        usage: Option<&keel_protocol::TokenUsage>,
        finish_reason: &'static str,
    ) {
        let Some(request) = &self.0 else {
            return;
        };
        let elapsed = request.started.elapsed();
        let mut attributes: super::events::Attributes = vec![
            ("event.kind", "response.completed".into()),
            ("duration_ms", to_i64(elapsed.as_millis()).into()),
        ];
        if let Some(usage) = usage {
            attributes.extend([
                ("input_token_count", to_i64(usage.input_tokens).into()),
                ("output_token_count", to_i64(usage.output_tokens).into()),
                (
                    "cached_token_count",
                    to_i64(usage.cached_input_tokens).into(),
                ),
                (
                    "reasoning_token_count",
                    to_i64(usage.reasoning_output_tokens).into(),
                ),
            ]);
            if let Ok(mut tokens) = request.turn.tokens.lock() {
                tokens.add(usage);
            }
            request.span.with(|span| set_usage(span, usage));
        }
        request.span.with(|span| {
            span.set_attribute(KeyValue::new(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(
                    vec![opentelemetry::StringValue::from(finish_reason)].into(),
                ),
            ));
        });
        request
            .turn
            .conversation
            .emit("codex.sse_event", Some(&request.context), attributes);
        request.span.end(Status::Ok);
    }

    /// `codex.sse_event` with the error that broke the stream; ends the span.
    pub(crate) fn failed(&mut self, error: &str) {
        let Some(request) = &self.0 else {
            return;
        };
        request.turn.conversation.emit(
            "codex.sse_event",
            Some(&request.context),
            vec![
                ("event.kind", "response.failed".into()),
                (
                    "duration_ms",
                    to_i64(request.started.elapsed().as_millis()).into(),
                ),
                ("error.message", error.to_string().into()),
            ],
        );
        request.span.end(Status::error(error.to_string()));
    }
}

/// A tool call's trace; empty when nothing is configured.
#[derive(Clone, Default)]
pub(crate) struct ToolTrace(Option<Arc<ToolInner>>);

debug_as_present!(ToolTrace);

struct ToolInner {
    turn: Arc<TurnInner>,
    span: OpenSpan,
    context: SpanContext,
    tool: String,
    call_id: String,
    arguments: String,
    failed: AtomicBool,
    /// The MCP server the tool belongs to, for an MCP tool.
    mcp_server: OnceLock<String>,
}

impl ToolTrace {
    /// `codex.tool_decision`: whether the call may run, and who said so.
    pub(crate) fn decision(&self, decision: keel_protocol::ReviewDecision, source: DecisionSource) {
        let Some(tool) = &self.0 else {
            return;
        };
        let decision = decision_name(decision);
        tool.span.with(|span| {
            span.set_attribute(KeyValue::new("keel.tool.decision", decision));
            span.set_attribute(KeyValue::new("keel.tool.decision_source", source.as_str()));
        });
        tool.turn.conversation.emit(
            "codex.tool_decision",
            Some(&tool.context),
            vec![
                ("tool_name", tool.tool.clone().into()),
                ("call_id", tool.call_id.clone().into()),
                ("decision", decision.into()),
                ("source", source.as_str().into()),
            ],
        );
    }

    /// The call is an MCP tool of `server` (GenAI's `extension` tools; Codex's `mcp_server`).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn mcp_server(&self, server: &str) {
        if let Some(tool) = &self.0 {
            let _ = tool.mcp_server.set(server.to_string());
            tool.span.with(|span| {
                span.set_attribute(KeyValue::new("gen_ai.tool.type", "extension"));
                span.set_attribute(KeyValue::new("keel.mcp.server", server.to_string()));
            });
        }
    }

    /// The call did not do what was asked (an error answer, a command that failed).
    pub(crate) fn mark_failed(&self) {
        if let Some(tool) = &self.0 {
            tool.failed.store(true, Ordering::Relaxed);
        }
    }

    /// The call's span as a W3C `traceparent`, for work it hands to another process.
    pub(crate) fn traceparent(&self) -> Option<String> {
        self.0
            .as_ref()
            .and_then(|tool| traceparent_of(&tool.context))
    }

    /// `codex.tool_result`, the call's metrics, and the end of its span.
    pub(crate) fn finish(&self, output: &str, elapsed: Duration) {
        let Some(tool) = &self.0 else {
            return;
        };
        let success = !tool.failed.load(Ordering::Relaxed);
        let conversation = &tool.turn.conversation;
        let mut attributes: super::events::Attributes = vec![
            ("tool_name", tool.tool.clone().into()),
            ("call_id", tool.call_id.clone().into()),
            ("arguments", tool.arguments.clone().into()),
            ("duration_ms", to_i64(elapsed.as_millis()).into()),
            ("success", if success { "true" } else { "false" }.into()),
            ("output_length", to_i64(output.len()).into()),
            ("output", conversation.content(output)),
        ];
        if let Some(server) = tool.mcp_server.get() {
            attributes.push(("mcp_server", server.clone().into()));
        }
        conversation.emit("codex.tool_result", Some(&tool.context), attributes);
        if let Some(instruments) = conversation.pipelines().instruments() {
            let labels = [
                KeyValue::new("tool", tool.tool.clone()),
                KeyValue::new("success", success),
            ];
            instruments.tool_calls.add(1, &labels);
            instruments.tool_duration.record(millis(elapsed), &labels);
        }
        tool.span.with(|span| {
            span.set_attribute(KeyValue::new("keel.tool.success", success));
        });
        tool.span.end(if success {
            Status::Ok
        } else {
            Status::error("the tool call failed")
        });
    }
}
