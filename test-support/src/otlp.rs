//! An OpenTelemetry collector for tests: it takes OTLP exports over HTTP (protobuf or JSON,
//! `POST /v1/logs|traces|metrics`) and gRPC, decodes them with the official protobuf
//! definitions, and lets a test wait for the log events, spans and metrics it expects.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use axum::serve::ListenerExt as _;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{NumberDataPoint, metric, number_data_point};
use tokio::sync::Notify;

use crate::{Error, Result};

/// How an export arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpTransport {
    /// HTTP with a protobuf body.
    HttpProtobuf,
    /// HTTP with a JSON body.
    HttpJson,
    /// gRPC.
    Grpc,
}

/// A log record as received, its attributes flattened to text.
#[derive(Debug, Clone)]
pub struct ReceivedLog {
    /// The record's event name (`codex.api_request`...).
    pub event_name: String,
    /// Attributes, values as text (numbers and booleans printed).
    pub attributes: BTreeMap<String, String>,
    /// The span it was recorded in, hex (empty when none).
    pub trace_id: String,
    /// The span it was recorded in, hex (empty when none).
    pub span_id: String,
    /// The resource's attributes.
    pub resource: BTreeMap<String, String>,
    /// How it arrived.
    pub transport: OtlpTransport,
}

/// A span as received.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// Its name.
    pub name: String,
    /// Hex trace id.
    pub trace_id: String,
    /// Hex span id.
    pub span_id: String,
    /// Hex id of its parent (empty for a root).
    pub parent_span_id: String,
    /// Attributes, values as text.
    pub attributes: BTreeMap<String, String>,
    /// The status code (0 unset, 1 ok, 2 error).
    pub status_code: i32,
    /// The resource's `service.name`.
    pub service_name: String,
    /// How it arrived.
    pub transport: OtlpTransport,
}

/// A metric as received (one entry per metric per export).
#[derive(Debug, Clone)]
pub struct ReceivedMetric {
    /// Its name.
    pub name: String,
    /// Each data point's attributes.
    pub points: Vec<BTreeMap<String, String>>,
    /// Each data point's value (a histogram's: its count), in the same order.
    pub values: Vec<f64>,
    /// How it arrived.
    pub transport: OtlpTransport,
}

#[derive(Default)]
struct Received {
    logs: Vec<ReceivedLog>,
    spans: Vec<ReceivedSpan>,
    metrics: Vec<ReceivedMetric>,
    /// The headers (HTTP) or metadata (gRPC) of every export.
    headers: Vec<BTreeMap<String, String>>,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Received>,
    arrived: Notify,
}

impl Shared {
    fn with(&self, f: impl FnOnce(&mut Received)) {
        if let Ok(mut received) = self.received.lock() {
            f(&mut received);
        }
        self.arrived.notify_waiters();
    }
}

/// The collector, listening on two loopback ports until dropped.
pub struct OtlpReceiver {
    http: SocketAddr,
    grpc: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl OtlpReceiver {
    /// Starts both listeners on loopback ports.
    pub async fn start() -> Result<Self> {
        let bind_error = |source| Error::Bind {
            addr: "127.0.0.1:0".to_string(),
            source,
        };
        let shared = Arc::new(Shared::default());
        let http_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(bind_error)?;
        let http = http_listener.local_addr().map_err(bind_error)?;
        let app = axum::Router::new()
            .route("/v1/logs", post(http_logs))
            .route("/v1/traces", post(http_traces))
            .route("/v1/metrics", post(http_metrics))
            .with_state(shared.clone());
        let http_task = tokio::spawn(async move {
            // Answers go out at once (no Nagle delay on small responses).
            let listener = http_listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        let grpc_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(bind_error)?;
        let grpc = grpc_listener.local_addr().map_err(bind_error)?;
        let service = Grpc(shared.clone());
        let grpc_task = tokio::spawn(async move {
            let incoming = futures::stream::unfold(grpc_listener, |listener| async move {
                let accepted = listener.accept().await.map(|(stream, _)| {
                    let _ = stream.set_nodelay(true);
                    stream
                });
                Some((accepted, listener))
            });
            let _ = tonic::transport::Server::builder()
                .add_service(LogsServiceServer::new(service.clone()))
                .add_service(TraceServiceServer::new(service.clone()))
                .add_service(MetricsServiceServer::new(service))
                .serve_with_incoming(incoming)
                .await;
        });
        Ok(Self {
            http,
            grpc,
            shared,
            tasks: vec![http_task, grpc_task],
        })
    }

    /// The OTLP/HTTP endpoint of one signal (`logs`, `traces` or `metrics`).
    pub fn http_endpoint(&self, signal: &str) -> String {
        format!("http://{}/v1/{signal}", self.http)
    }

    /// The OTLP/gRPC endpoint.
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// Every log record received so far.
    pub fn logs(&self) -> Vec<ReceivedLog> {
        self.read(|received| received.logs.clone())
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.read(|received| received.spans.clone())
    }

    /// Every metric received so far.
    pub fn metrics(&self) -> Vec<ReceivedMetric> {
        self.read(|received| received.metrics.clone())
    }

    /// The headers (or gRPC metadata) of every export received so far, names lowercase.
    pub fn headers(&self) -> Vec<BTreeMap<String, String>> {
        self.read(|received| received.headers.clone())
    }

    fn read<T>(&self, f: impl FnOnce(&Received) -> T) -> T {
        match self.shared.received.lock() {
            Ok(received) => f(&received),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    /// Waits until `done` holds for what was received, up to `timeout`.
    pub async fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&OtlpReceiver) -> bool,
    ) -> Result<()> {
        let wait = async {
            loop {
                let arrived = self.shared.arrived.notified();
                if done(self) {
                    return;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| Error::Timeout {
                what: what.to_string(),
                timeout,
                context: format!(
                    "log events: {:?}; spans: {:?}; metrics: {:?}",
                    self.logs()
                        .iter()
                        .map(|log| &log.event_name)
                        .collect::<Vec<_>>(),
                    self.spans()
                        .iter()
                        .map(|span| &span.name)
                        .collect::<Vec<_>>(),
                    self.metrics()
                        .iter()
                        .map(|metric| &metric.name)
                        .collect::<Vec<_>>(),
                ),
            })
    }
}

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::DoubleValue(number)) => number.to_string(),
        Some(any_value::Value::ArrayValue(array)) => array
            .values
            .iter()
            .map(|value| text(&Some(value.clone())))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(pairs: &[KeyValue]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|pair| (pair.key.clone(), text(&pair.value)))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn take_logs(request: ExportLogsServiceRequest, transport: OtlpTransport) -> Vec<ReceivedLog> {
    let mut logs = Vec::new();
    for resource_logs in request.resource_logs {
        let resource = attributes(
            &resource_logs
                .resource
                .map(|resource| resource.attributes)
                .unwrap_or_default(),
        );
        for scope in resource_logs.scope_logs {
            for record in scope.log_records {
                logs.push(ReceivedLog {
                    event_name: record.event_name.clone(),
                    attributes: attributes(&record.attributes),
                    trace_id: hex(&record.trace_id),
                    span_id: hex(&record.span_id),
                    resource: resource.clone(),
                    transport,
                });
            }
        }
    }
    logs
}

fn take_spans(request: ExportTraceServiceRequest, transport: OtlpTransport) -> Vec<ReceivedSpan> {
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = attributes(
            &resource_spans
                .resource
                .map(|resource| resource.attributes)
                .unwrap_or_default(),
        );
        let service_name = resource.get("service.name").cloned().unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(ReceivedSpan {
                    name: span.name.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes: attributes(&span.attributes),
                    status_code: span.status.map_or(0, |status| status.code),
                    service_name: service_name.clone(),
                    transport,
                });
            }
        }
    }
    spans
}

fn take_metrics(
    request: ExportMetricsServiceRequest,
    transport: OtlpTransport,
) -> Vec<ReceivedMetric> {
    let mut metrics = Vec::new();
    for resource_metrics in request.resource_metrics {
        for scope in resource_metrics.scope_metrics {
            for metric in scope.metrics {
                let (points, values) = match &metric.data {
                    Some(metric::Data::Sum(sum)) => number_points(&sum.data_points),
                    Some(metric::Data::Gauge(gauge)) => number_points(&gauge.data_points),
                    Some(metric::Data::Histogram(histogram)) => histogram
                        .data_points
                        .iter()
                        .map(|point| (attributes(&point.attributes), point.count as f64))
                        .unzip(),
                    // Kinds Keel never sends.
                    Some(metric::Data::ExponentialHistogram(_) | metric::Data::Summary(_))
                    | None => (Vec::new(), Vec::new()),
                };
                metrics.push(ReceivedMetric {
                    name: metric.name.clone(),
                    points,
                    values,
                    transport,
                });
            }
        }
    }
    metrics
}

type Points = (Vec<BTreeMap<String, String>>, Vec<f64>);

fn number_points(points: &[NumberDataPoint]) -> Points {
    points
        .iter()
        .map(|point| {
            let value = match point.value {
                Some(number_data_point::Value::AsDouble(value)) => value,
                Some(number_data_point::Value::AsInt(value)) => value as f64,
                None => f64::NAN,
            };
            (attributes(&point.attributes), value)
        })
        .unzip()
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                value.to_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Decodes an HTTP export by its content type.
fn decode<T: prost::Message + Default + serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: &Bytes,
) -> std::result::Result<(T, OtlpTransport), (StatusCode, String)> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if content_type.starts_with("application/json") {
        serde_json::from_slice(body)
            .map(|request| (request, OtlpTransport::HttpJson))
            .map_err(|err| (StatusCode::BAD_REQUEST, format!("bad OTLP JSON: {err}")))
    } else if content_type.starts_with("application/x-protobuf") {
        T::decode(body.as_ref())
            .map(|request| (request, OtlpTransport::HttpProtobuf))
            .map_err(|err| (StatusCode::BAD_REQUEST, format!("bad OTLP protobuf: {err}")))
    } else {
        Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content type `{content_type}`"),
        ))
    }
}

/// The empty success answer, in the request's encoding.
fn accepted<T: prost::Message + serde::Serialize + Default>(
    transport: OtlpTransport,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>) {
    match transport {
        OtlpTransport::HttpJson => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&T::default()).unwrap_or_default(),
        ),
        _ => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            T::default().encode_to_vec(),
        ),
    }
}

type HttpAnswer = std::result::Result<
    (StatusCode, [(header::HeaderName, &'static str); 1], Vec<u8>),
    (StatusCode, String),
>;

async fn http_logs(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> HttpAnswer {
    let (request, transport) = decode::<ExportLogsServiceRequest>(&headers, &body)?;
    shared.with(|received| {
        received.logs.extend(take_logs(request, transport));
        received.headers.push(header_map(&headers));
    });
    Ok(accepted::<ExportLogsServiceResponse>(transport))
}

async fn http_traces(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> HttpAnswer {
    let (request, transport) = decode::<ExportTraceServiceRequest>(&headers, &body)?;
    shared.with(|received| {
        received.spans.extend(take_spans(request, transport));
        received.headers.push(header_map(&headers));
    });
    Ok(accepted::<ExportTraceServiceResponse>(transport))
}

async fn http_metrics(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> HttpAnswer {
    let (request, transport) = decode::<ExportMetricsServiceRequest>(&headers, &body)?;
    shared.with(|received| {
        received.metrics.extend(take_metrics(request, transport));
        received.headers.push(header_map(&headers));
    });
    Ok(accepted::<ExportMetricsServiceResponse>(transport))
}

/// The gRPC services, into the same store.
#[derive(Clone)]
struct Grpc(Arc<Shared>);

fn metadata_map(metadata: &tonic::metadata::MetadataMap) -> BTreeMap<String, String> {
    header_map(&metadata.clone().into_headers())
}

#[tonic::async_trait]
impl LogsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> std::result::Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        let headers = metadata_map(request.metadata());
        let logs = take_logs(request.into_inner(), OtlpTransport::Grpc);
        self.0.with(|received| {
            received.logs.extend(logs);
            received.headers.push(headers);
        });
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> std::result::Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let headers = metadata_map(request.metadata());
        let spans = take_spans(request.into_inner(), OtlpTransport::Grpc);
        self.0.with(|received| {
            received.spans.extend(spans);
            received.headers.push(headers);
        });
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> std::result::Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let headers = metadata_map(request.metadata());
        let metrics = take_metrics(request.into_inner(), OtlpTransport::Grpc);
        self.0.with(|received| {
            received.metrics.extend(metrics);
            received.headers.push(headers);
        });
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}
