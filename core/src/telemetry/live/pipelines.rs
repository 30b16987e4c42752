//! The exporters built for one `[otel]` configuration, and one conversation's share of them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::logs::LoggerProvider as _;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::exporters;
use super::instruments::Instruments;
use crate::config::OtelSettings;
use crate::telemetry::{ConversationFacts, Gauge};

/// The name every record's instrumentation scope and `service.name` carry.
const SERVICE_NAME: &str = "keel";

/// How long shutting down may take to send what is left (the signals flush side by side).
const SHUTDOWN_BOUND: Duration = Duration::from_secs(2);

/// The providers built for one `[otel]` configuration.
pub(super) struct Pipelines {
    logs: Option<(SdkLoggerProvider, SdkLogger)>,
    traces: Option<(SdkTracerProvider, SdkTracer)>,
    metrics: Option<(SdkMeterProvider, Instruments)>,
    /// The program's gauges, kept for as long as the pipeline.
    gauges: Mutex<Vec<opentelemetry::metrics::ObservableGauge<u64>>>,
    log_user_prompt: bool,
}

impl Pipelines {
    pub(super) fn build(settings: &OtelSettings) -> Result<Self, exporters::ExporterError> {
        let resource = Resource::builder()
            .with_service_name(SERVICE_NAME)
            .with_attributes([
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("deployment.environment.name", settings.environment.clone()),
                KeyValue::new("env", settings.environment.clone()),
            ])
            .build();
        let logs = exporters::log_exporter(&settings.exporter)?.map(|exporter| {
            let provider = SdkLoggerProvider::builder()
                .with_resource(resource.clone())
                .with_batch_exporter(exporter)
                .build();
            let logger = provider.logger(SERVICE_NAME);
            (provider, logger)
        });
        let traces = exporters::span_exporter(&settings.trace_exporter)?.map(|exporter| {
            let provider = SdkTracerProvider::builder()
                .with_resource(resource.clone())
                .with_batch_exporter(exporter)
                .build();
            let tracer = provider.tracer(SERVICE_NAME);
            (provider, tracer)
        });
        let metrics = exporters::metric_exporter(&settings.metrics_exporter)?.map(|exporter| {
            let provider = SdkMeterProvider::builder()
                .with_resource(resource)
                .with_periodic_exporter(exporter)
                .build();
            let instruments = Instruments::new(&provider.meter(SERVICE_NAME));
            (provider, instruments)
        });
        Ok(Self {
            logs,
            traces,
            metrics,
            gauges: Mutex::new(Vec::new()),
            log_user_prompt: settings.log_user_prompt,
        })
    }

    pub(super) fn register(&self, gauge: &Gauge) {
        let Some((provider, _)) = &self.metrics else {
            return;
        };
        let read = gauge.read.clone();
        let observed = provider
            .meter(SERVICE_NAME)
            .u64_observable_gauge(gauge.name)
            .with_description(gauge.description)
            .with_callback(move |observer| observer.observe(read(), &[]))
            .build();
        if let Ok(mut gauges) = self.gauges.lock() {
            gauges.push(observed);
        }
    }

    /// Flushes and stops the three signals side by side, so a collector that is down costs
    /// one bound, not three.
    pub(super) fn shutdown(&self) {
        std::thread::scope(|scope| {
            if let Some((provider, _)) = &self.logs {
                scope.spawn(|| {
                    if let Err(err) = provider.shutdown_with_timeout(SHUTDOWN_BOUND) {
                        tracing::debug!("otel: log exporter shutdown: {err}");
                    }
                });
            }
            if let Some((provider, _)) = &self.traces {
                scope.spawn(|| {
                    if let Err(err) = provider.shutdown_with_timeout(SHUTDOWN_BOUND) {
                        tracing::debug!("otel: span exporter shutdown: {err}");
                    }
                });
            }
            if let Some((provider, _)) = &self.metrics {
                scope.spawn(|| {
                    if let Err(err) = provider.shutdown_with_timeout(SHUTDOWN_BOUND) {
                        tracing::debug!("otel: metric exporter shutdown: {err}");
                    }
                });
            }
        });
    }

    pub(super) fn logger(&self) -> Option<&SdkLogger> {
        self.logs.as_ref().map(|(_, logger)| logger)
    }

    pub(super) fn tracer(&self) -> Option<&SdkTracer> {
        self.traces.as_ref().map(|(_, tracer)| tracer)
    }

    /// Whether user content (prompts, tool output) may be sent as written.
    pub(super) fn logs_user_content(&self) -> bool {
        self.log_user_prompt
    }

    pub(super) fn instruments(&self) -> Option<&Instruments> {
        self.metrics.as_ref().map(|(_, instruments)| instruments)
    }
}

/// One conversation's share of the exporters, with the attributes all its records carry.
pub(super) struct ConversationTelemetry {
    pipelines: Arc<Pipelines>,
    facts: ConversationFacts,
}

impl ConversationTelemetry {
    pub(super) fn new(pipelines: Arc<Pipelines>, facts: ConversationFacts) -> Self {
        Self { pipelines, facts }
    }

    pub(super) fn pipelines(&self) -> &Pipelines {
        &self.pipelines
    }

    pub(super) fn facts(&self) -> &ConversationFacts {
        &self.facts
    }
}
