//! Spans for the processes a served exec-server runs, so a turn's trace continues on the
//! host where its commands run. A `command/exec` may carry the caller's span as a W3C
//! `traceparent` (an optional member Codex's exec-servers and clients do without); the
//! process's span is its child, from start to exit.
//!
//! Configured the standard OpenTelemetry way, for a service of its own:
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (or `OTEL_EXPORTER_OTLP_ENDPOINT`, to which
//! `/v1/traces` is added for HTTP) and `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (or
//! `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`, the default, `http/json` or `grpc`). Without
//! an endpoint nothing is built and nothing is sent. Only a served exec-server (`run_main`)
//! reads them; one embedded in another program never traces.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer as _, TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, Span};

/// How long shutting down may take to send the spans still held.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(3);

static TRACING: OnceLock<Option<(SdkTracerProvider, SdkTracer)>> = OnceLock::new();

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Builds the span exporter the environment names, once; a bad setting is logged and
/// leaves tracing off.
pub(crate) fn install_from_env() {
    TRACING.get_or_init(|| {
        env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"))?;
        // The HTTP exporter's client needs a TLS provider, even for `http://` (the process's
        // own choice wins when it made one).
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .unwrap_or_else(|| "http/protobuf".to_string());
        let exporter = match protocol.as_str() {
            "grpc" => SpanExporter::builder()
                .with_tonic()
                .with_protocol(Protocol::Grpc)
                .build(),
            "http/json" => SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpJson)
                .build(),
            "http/protobuf" => SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .build(),
            other => {
                tracing::warn!("otel: unknown OTLP protocol `{other}`; no spans are sent");
                return None;
            }
        };
        let exporter = match exporter {
            Ok(exporter) => exporter,
            Err(err) => {
                tracing::warn!("otel: {err}; no spans are sent");
                return None;
            }
        };
        let provider = SdkTracerProvider::builder()
            .with_resource(
                opentelemetry_sdk::Resource::builder()
                    .with_service_name("keel-exec-server")
                    .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                    .build(),
            )
            .with_batch_exporter(exporter)
            .build();
        let tracer = provider.tracer("keel-exec-server");
        Some((provider, tracer))
    });
}

/// Sends the spans still held and stops the exporter (within a few seconds).
pub(crate) async fn shutdown() {
    let Some(Some((provider, _))) = TRACING.get() else {
        return;
    };
    let provider = provider.clone();
    let done = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_BOUND));
    if let Ok(Err(err)) = done.await {
        tracing::debug!("otel: span exporter shutdown: {err}");
    }
}

/// A process's span, ended with its exit code.
pub(crate) struct ProcessSpan(Span);

impl ProcessSpan {
    /// The span of a process starting now for `program` as session `session`, under the
    /// caller's `traceparent` when it sent one; `None` when tracing is off.
    pub(crate) fn start(program: &str, session: &str, traceparent: Option<&str>) -> Option<Self> {
        let (_, tracer) = TRACING.get()?.as_ref()?;
        let parent = match traceparent {
            Some(header) => TraceContextPropagator::new().extract(&HashMap::from([(
                "traceparent".to_string(),
                header.to_string(),
            )])),
            None => opentelemetry::Context::new(),
        };
        let name = std::path::Path::new(program).file_name().map_or_else(
            || program.to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        let span = tracer
            .span_builder(format!("exec {name}"))
            .with_kind(SpanKind::Server)
            .with_attributes([
                KeyValue::new("process.executable.name", name),
                KeyValue::new("keel.exec.session_id", session.to_string()),
            ])
            .start_with_context(tracer, &parent);
        Some(Self(span))
    }

    /// Ends the span with the process's exit (`None`: it was lost, say to a shutdown).
    pub(crate) fn finish(mut self, exit_code: Option<i32>) {
        match exit_code {
            Some(code) => {
                self.0
                    .set_attribute(KeyValue::new("process.exit.code", i64::from(code)));
                self.0.set_status(if code == 0 {
                    Status::Ok
                } else {
                    Status::error(format!("exit code {code}"))
                });
            }
            None => self
                .0
                .set_status(Status::error("the process's exit is unknown")),
        }
        self.0.end();
    }
}
