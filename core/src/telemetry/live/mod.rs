//! The telemetry handles with exporters behind them (the `otel` feature).

mod events;
mod exporters;
mod instruments;
mod pipelines;
mod trace;

use std::sync::{Arc, Mutex};

use opentelemetry::KeyValue;

pub(crate) use self::trace::{ToolTrace, TurnTrace};
use super::{ConversationFacts, Gauge};
use crate::config::OtelSettings;
use pipelines::{ConversationTelemetry, Pipelines};

/// The manager's exporters, one set per distinct `[otel]` configuration, built when the first
/// conversation that needs them starts.
#[derive(Default)]
pub(crate) struct TelemetryHub {
    pipelines: Mutex<Vec<(OtelSettings, Option<Arc<Pipelines>>)>>,
    /// Gauges the program reports, registered with every metrics pipeline (now or later).
    gauges: Mutex<Vec<Gauge>>,
    /// Whether the notice that `statsig` sends nothing was given.
    statsig_noticed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TelemetryHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryHub").finish_non_exhaustive()
    }
}

impl TelemetryHub {
    /// The telemetry of a conversation starting with `settings` (its `facts` gathered only
    /// when something is exported); sends
    /// `codex.conversation_starts` and counts the thread.
    pub(crate) fn conversation(
        &self,
        settings: &OtelSettings,
        facts: impl FnOnce() -> ConversationFacts,
    ) -> Telemetry {
        let Some(pipelines) = self.pipelines_for(settings) else {
            return Telemetry::default();
        };
        let conversation = Arc::new(ConversationTelemetry::new(pipelines, facts()));
        conversation.conversation_starts();
        Telemetry(Some(conversation))
    }

    fn pipelines_for(&self, settings: &OtelSettings) -> Option<Arc<Pipelines>> {
        if settings.names_statsig()
            && !self
                .statsig_noticed
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!("otel: `statsig` is Codex's own collector; Keel sends nothing there");
        }
        if !settings.exports_anything() {
            return None;
        }
        let Ok(mut known) = self.pipelines.lock() else {
            return None;
        };
        if let Some((_, pipelines)) = known.iter().find(|(known, _)| known == settings) {
            return pipelines.clone();
        }
        let pipelines = match Pipelines::build(settings) {
            Ok(pipelines) => {
                if let Ok(gauges) = self.gauges.lock() {
                    for gauge in gauges.iter() {
                        pipelines.register(gauge);
                    }
                }
                Some(Arc::new(pipelines))
            }
            Err(err) => {
                // Reported once per configuration; conversations run without telemetry.
                tracing::warn!("otel: {err}; no telemetry is sent");
                None
            }
        };
        known.push((settings.clone(), pipelines.clone()));
        pipelines
    }

    /// Builds the exporters `settings` name, if not built yet.
    pub(crate) fn start(&self, settings: &OtelSettings) {
        let _ = self.pipelines_for(settings);
    }

    /// Reports `gauge` with every metrics export, from pipelines built already and later.
    pub(crate) fn observe(&self, gauge: Gauge) {
        if let Ok(known) = self.pipelines.lock() {
            for pipelines in known.iter().filter_map(|(_, pipelines)| pipelines.as_ref()) {
                pipelines.register(&gauge);
            }
        }
        if let Ok(mut gauges) = self.gauges.lock() {
            gauges.push(gauge);
        }
    }

    /// Sends what the exporters still hold and stops them (each signal within a few
    /// seconds, so an unreachable collector cannot hold up the program's exit).
    pub(crate) async fn shutdown(&self) {
        let pipelines: Vec<Arc<Pipelines>> = match self.pipelines.lock() {
            Ok(mut known) => known
                .drain(..)
                .filter_map(|(_, pipelines)| pipelines)
                .collect(),
            Err(_) => return,
        };
        if pipelines.is_empty() {
            return;
        }
        // The SDK blocks while it flushes: off the async workers.
        let done = tokio::task::spawn_blocking(move || {
            for pipelines in pipelines {
                pipelines.shutdown();
            }
        })
        .await;
        if let Err(err) = done {
            tracing::warn!("otel: shutting the exporters down failed: {err}");
        }
    }
}

/// A conversation's telemetry; empty when nothing is configured.
#[derive(Clone, Default)]
pub(crate) struct Telemetry(Option<Arc<ConversationTelemetry>>);

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Telemetry").field(&self.0.is_some()).finish()
    }
}

impl Telemetry {
    /// Counts an agent-job row that ended `status` (`completed`, `failed`, `cancelled`).
    #[cfg_attr(not(feature = "agent-jobs"), allow(dead_code))]
    pub(crate) fn job_row_ended(&self, status: &str) {
        if let Some(instruments) = self.0.as_ref().and_then(|c| c.pipelines().instruments()) {
            instruments
                .job_rows
                .add(1, &[KeyValue::new("status", status.to_string())]);
        }
    }

    /// The trace of a turn starting now with `model`, under the remote span `parent` (a W3C
    /// `traceparent`) when the client sent one.
    pub(crate) fn turn(&self, turn_id: &str, model: &str, parent: Option<&str>) -> TurnTrace {
        match &self.0 {
            Some(conversation) => TurnTrace::start(conversation.clone(), turn_id, model, parent),
            None => TurnTrace::default(),
        }
    }
}
