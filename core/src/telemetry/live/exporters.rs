//! OTLP exporters for one signal from its `[otel]` setting: HTTP (protobuf or JSON, on a
//! blocking client that runs on the exporter's own thread) or gRPC (on the async runtime the
//! conversation starts on), with headers and TLS as configured.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry_otlp::{
    LogExporter, MetricExporter, Protocol, RetryPolicy, SpanExporter, WithExportConfig,
    WithHttpConfig, WithTonicConfig,
};

use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::config::{OtelExporter, OtelTls, OtlpHttpProtocol};

/// How long one export may take before it counts as failed.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// One quick retry for a collector's blip; a collector that is down costs a batch (the next
/// one is tried afresh), never seconds of backoff at the program's exit.
fn retry_policy() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_retries(1)
        .with_initial_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_millis(100))
        .with_max_jitter(Duration::from_millis(20))
}

/// Why an exporter could not be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExporterError {
    /// A certificate or key file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A header name or value cannot be sent.
    #[error("header `{0}` cannot be sent as gRPC metadata")]
    Header(String),
    /// The HTTP client for the exporter could not be built.
    #[error("HTTP client for {endpoint}: {message}")]
    HttpClient {
        /// The collector.
        endpoint: String,
        /// What failed.
        message: String,
    },
    /// The OTLP library refused the configuration.
    #[error("exporter for {endpoint}: {source}")]
    Build {
        /// The collector.
        endpoint: String,
        /// Its error.
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// Builds the exporter of one signal the same way for logs, spans and metrics: the three
/// OTLP builders share their configuration traits but not a type.
macro_rules! build_exporter {
    ($exporter:ty, $setting:expr) => {{
        match $setting {
            OtelExporter::None | OtelExporter::Statsig => Ok(None),
            OtelExporter::OtlpHttp {
                endpoint,
                protocol,
                headers,
                tls,
            } => {
                let client = http_client(endpoint, tls.as_ref())?;
                <$exporter>::builder()
                    .with_http()
                    .with_endpoint(endpoint.clone())
                    .with_protocol(match protocol {
                        OtlpHttpProtocol::Binary => Protocol::HttpBinary,
                        OtlpHttpProtocol::Json => Protocol::HttpJson,
                    })
                    .with_timeout(EXPORT_TIMEOUT)
                    .with_headers(headers.clone().into_iter().collect::<HashMap<_, _>>())
                    .with_http_client(client)
                    .with_retry_policy(retry_policy())
                    .build()
                    .map(Some)
                    .map_err(|source| ExporterError::Build {
                        endpoint: endpoint.clone(),
                        source,
                    })
            }
            OtelExporter::OtlpGrpc {
                endpoint,
                headers,
                tls,
            } => {
                let mut builder = <$exporter>::builder()
                    .with_tonic()
                    .with_endpoint(endpoint.clone())
                    .with_protocol(Protocol::Grpc)
                    .with_timeout(EXPORT_TIMEOUT)
                    .with_retry_policy(retry_policy())
                    .with_metadata(metadata(headers)?);
                if let Some(tls) = grpc_tls(endpoint, tls.as_ref())? {
                    builder = builder.with_tls_config(tls);
                }
                builder
                    .build()
                    .map(Some)
                    .map_err(|source| ExporterError::Build {
                        endpoint: endpoint.clone(),
                        source,
                    })
            }
        }
    }};
}

/// The exporter for `exporter` (log events), if it sends anywhere.
pub(crate) fn log_exporter(exporter: &OtelExporter) -> Result<Option<LogExporter>, ExporterError> {
    build_exporter!(LogExporter, exporter)
}

/// The exporter for `trace_exporter` (spans), if it sends anywhere.
pub(crate) fn span_exporter(
    exporter: &OtelExporter,
) -> Result<Option<SpanExporter>, ExporterError> {
    build_exporter!(SpanExporter, exporter)
}

/// The exporter for `metrics_exporter`, if it sends anywhere.
pub(crate) fn metric_exporter(
    exporter: &OtelExporter,
) -> Result<Option<MetricExporter>, ExporterError> {
    build_exporter!(MetricExporter, exporter)
}

fn read(path: &std::path::Path) -> Result<Vec<u8>, ExporterError> {
    std::fs::read(path).map_err(|source| ExporterError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A blocking client with the configured CA and client certificate. Built on a thread of
/// its own: a blocking client may not be made inside the async runtime.
fn http_client(
    endpoint: &str,
    tls: Option<&OtelTls>,
) -> Result<reqwest::blocking::Client, ExporterError> {
    crate::tls::install_tls_provider();
    let mut builder = reqwest::blocking::Client::builder().timeout(EXPORT_TIMEOUT);
    if let Some(tls) = tls {
        if let Some(ca) = &tls.ca_certificate {
            let pem = read(ca)?;
            let certificate =
                reqwest::Certificate::from_pem(&pem).map_err(|err| ExporterError::HttpClient {
                    endpoint: endpoint.to_string(),
                    message: format!("{}: {err}", ca.display()),
                })?;
            builder = builder.add_root_certificate(certificate);
        }
        if let (Some(certificate), Some(key)) = (&tls.client_certificate, &tls.client_private_key) {
            let mut pem = read(certificate)?;
            pem.push(b'\n');
            pem.extend(read(key)?);
            let identity =
                reqwest::Identity::from_pem(&pem).map_err(|err| ExporterError::HttpClient {
                    endpoint: endpoint.to_string(),
                    message: format!("{}: {err}", certificate.display()),
                })?;
            builder = builder.identity(identity);
        }
    }
    std::thread::Builder::new()
        .name("keel-otel-client".to_string())
        .spawn(move || builder.build())
        .map_err(|err| ExporterError::HttpClient {
            endpoint: endpoint.to_string(),
            message: err.to_string(),
        })?
        .join()
        .map_err(|_| ExporterError::HttpClient {
            endpoint: endpoint.to_string(),
            message: "the thread building it failed".to_string(),
        })?
        .map_err(|err| ExporterError::HttpClient {
            endpoint: endpoint.to_string(),
            message: err.to_string(),
        })
}

fn metadata(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<MetadataMap, ExporterError> {
    let mut map = MetadataMap::new();
    for (name, value) in headers {
        let key = MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes())
            .map_err(|_| ExporterError::Header(name.clone()))?;
        let value = MetadataValue::try_from(value.as_str())
            .map_err(|_| ExporterError::Header(name.clone()))?;
        map.insert(key, value);
    }
    Ok(map)
}

/// The TLS settings of a gRPC exporter: the system's roots plus the configured CA and client
/// certificate; `None` for a plain `http://` endpoint without TLS settings.
fn grpc_tls(
    endpoint: &str,
    tls: Option<&OtelTls>,
) -> Result<Option<ClientTlsConfig>, ExporterError> {
    if tls.is_none() && !endpoint.starts_with("https://") {
        return Ok(None);
    }
    crate::tls::install_tls_provider();
    let mut config = ClientTlsConfig::new().with_native_roots();
    if let Some(tls) = tls {
        if let Some(ca) = &tls.ca_certificate {
            config = config.ca_certificate(Certificate::from_pem(read(ca)?));
        }
        if let (Some(certificate), Some(key)) = (&tls.client_certificate, &tls.client_private_key) {
            config = config.identity(Identity::from_pem(read(certificate)?, read(key)?));
        }
    }
    Ok(Some(config))
}
