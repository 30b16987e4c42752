//! The metrics Keel records, with Codex's names where Codex has the metric.

use opentelemetry::metrics::{Counter, Histogram, Meter};

/// Every instrument of one meter provider.
pub(crate) struct Instruments {
    /// `codex.thread.started`: conversations started.
    pub thread_started: Counter<u64>,
    /// `keel.turn.count`: turns ended, by `outcome` (`completed`, `interrupted`, `failed`).
    pub turns: Counter<u64>,
    /// `codex.turn.e2e_duration_ms`: a turn from its start to its end.
    pub turn_duration: Histogram<f64>,
    /// `codex.turn.ttft.duration_ms`: a turn's start to the model's first output.
    pub turn_ttft: Histogram<f64>,
    /// `codex.turn.token_usage`: a turn's tokens, by `token_type`.
    pub turn_tokens: Histogram<u64>,
    /// `codex.tool.call`: tool calls, by `tool` and `success`.
    pub tool_calls: Counter<u64>,
    /// `codex.tool.call.duration_ms`: how long each tool call took.
    pub tool_duration: Histogram<f64>,
    /// `codex.api_request`: model requests, by `status` and `success`.
    pub api_requests: Counter<u64>,
    /// `codex.api_request.duration_ms`: a request's start to the provider's answer.
    pub api_duration: Histogram<f64>,
    /// `keel.agent_job.rows`: agent-job rows finished, by `status`.
    pub job_rows: Counter<u64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            thread_started: meter
                .u64_counter("codex.thread.started")
                .with_description("Conversations started")
                .build(),
            turns: meter
                .u64_counter("keel.turn.count")
                .with_description("Turns ended, by outcome")
                .build(),
            turn_duration: meter
                .f64_histogram("codex.turn.e2e_duration_ms")
                .with_unit("ms")
                .with_description("Turn duration, start to end")
                .build(),
            turn_ttft: meter
                .f64_histogram("codex.turn.ttft.duration_ms")
                .with_unit("ms")
                .with_description("Turn start to the model's first output")
                .build(),
            turn_tokens: meter
                .u64_histogram("codex.turn.token_usage")
                .with_unit("{token}")
                .with_description("Tokens a turn used, by token type")
                .build(),
            tool_calls: meter
                .u64_counter("codex.tool.call")
                .with_description("Tool calls, by tool and success")
                .build(),
            tool_duration: meter
                .f64_histogram("codex.tool.call.duration_ms")
                .with_unit("ms")
                .with_description("Tool call duration")
                .build(),
            api_requests: meter
                .u64_counter("codex.api_request")
                .with_description("Model requests, by status")
                .build(),
            api_duration: meter
                .f64_histogram("codex.api_request.duration_ms")
                .with_unit("ms")
                .with_description("Model request start to the provider's answer")
                .build(),
            job_rows: meter
                .u64_counter("keel.agent_job.rows")
                .with_description("Agent-job rows finished, by status")
                .build(),
        }
    }
}
