//! `[otel]`: where Keel sends telemetry, with Codex's keys and meanings — `exporter` for log
//! events, `trace_exporter` for spans, `metrics_exporter` for metrics, each `"none"`,
//! `"statsig"` (Codex's own collector; Keel sends nothing there) or an OTLP endpoint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The deployment environment Codex reports when `otel.environment` is not set.
pub const DEFAULT_OTEL_ENVIRONMENT: &str = "dev";

/// The `[otel]` table as written.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct OtelToml {
    pub environment: Option<String>,
    pub log_user_prompt: Option<bool>,
    pub exporter: Option<OtelExporterToml>,
    pub trace_exporter: Option<OtelExporterToml>,
    pub metrics_exporter: Option<OtelExporterToml>,
}

/// One exporter as written: `"none"`, `"statsig"`, `{ otlp-http = {...} }` or
/// `{ otlp-grpc = {...} }`.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OtelExporterToml {
    None,
    Statsig,
    OtlpHttp(OtlpHttpToml),
    OtlpGrpc(OtlpGrpcToml),
}

#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct OtlpHttpToml {
    pub endpoint: String,
    #[serde(default)]
    pub protocol: OtlpHttpProtocol,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub tls: Option<OtelTlsToml>,
}

#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct OtlpGrpcToml {
    pub endpoint: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub tls: Option<OtelTlsToml>,
}

#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct OtelTlsToml {
    pub ca_certificate: Option<PathBuf>,
    pub client_certificate: Option<PathBuf>,
    pub client_private_key: Option<PathBuf>,
}

/// How an OTLP/HTTP exporter encodes what it sends.
#[cfg_attr(test, derive(serde::Serialize))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtlpHttpProtocol {
    /// Protobuf (`application/x-protobuf`), what every collector accepts.
    #[default]
    Binary,
    /// Protobuf's JSON mapping (`application/json`).
    Json,
}

/// The resolved `[otel]` section: what a conversation's telemetry is sent to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OtelSettings {
    /// Reported as the deployment environment of every record (`dev` by default).
    pub environment: String,
    /// Whether the text of user prompts goes into `codex.user_prompt` events (off: only the
    /// length is sent).
    pub log_user_prompt: bool,
    /// Where log events go (`exporter`).
    pub exporter: OtelExporter,
    /// Where spans go (`trace_exporter`).
    pub trace_exporter: OtelExporter,
    /// Where metrics go (`metrics_exporter`).
    pub metrics_exporter: OtelExporter,
}

impl Default for OtelSettings {
    fn default() -> Self {
        Self {
            environment: DEFAULT_OTEL_ENVIRONMENT.to_string(),
            log_user_prompt: false,
            exporter: OtelExporter::None,
            trace_exporter: OtelExporter::None,
            metrics_exporter: OtelExporter::None,
        }
    }
}

impl OtelSettings {
    /// Whether any signal has somewhere to go.
    pub fn exports_anything(&self) -> bool {
        [&self.exporter, &self.trace_exporter, &self.metrics_exporter]
            .iter()
            .any(|exporter| exporter.endpoint().is_some())
    }

    /// Whether an exporter names Codex's Statsig collector, which Keel never sends to.
    pub fn names_statsig(&self) -> bool {
        [&self.exporter, &self.trace_exporter, &self.metrics_exporter]
            .iter()
            .any(|exporter| matches!(exporter, OtelExporter::Statsig))
    }
}

/// One signal's destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OtelExporter {
    /// Nothing is sent.
    None,
    /// Codex's own collector: Keel sends nothing there (reported once).
    Statsig,
    /// OTLP over HTTP to `endpoint`, used as given (a collector's `/v1/logs`, `/v1/traces`
    /// or `/v1/metrics`).
    OtlpHttp {
        /// The full URL records are posted to.
        endpoint: String,
        /// Protobuf or JSON.
        protocol: OtlpHttpProtocol,
        /// Sent with every export (an API key, say).
        headers: BTreeMap<String, String>,
        /// Certificates, when the collector needs its own CA or a client certificate.
        tls: Option<OtelTls>,
    },
    /// OTLP over gRPC to `endpoint` (`http://host:4317`, or `https://` for TLS).
    OtlpGrpc {
        /// The collector's address.
        endpoint: String,
        /// Sent as gRPC metadata with every export.
        headers: BTreeMap<String, String>,
        /// Certificates, when the collector needs its own CA or a client certificate.
        tls: Option<OtelTls>,
    },
}

impl OtelExporter {
    /// Where records are sent, for an OTLP exporter.
    pub fn endpoint(&self) -> Option<&str> {
        match self {
            Self::None | Self::Statsig => None,
            Self::OtlpHttp { endpoint, .. } | Self::OtlpGrpc { endpoint, .. } => Some(endpoint),
        }
    }
}

/// TLS material for an OTLP exporter, as absolute paths (relative ones in the file are
/// resolved against the Keel home, as Codex resolves them against its home).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OtelTls {
    /// A PEM CA bundle trusted in addition to the system's roots.
    pub ca_certificate: Option<PathBuf>,
    /// A PEM client certificate for mutual TLS (with `client_private_key`).
    pub client_certificate: Option<PathBuf>,
    /// The PEM private key of `client_certificate`.
    pub client_private_key: Option<PathBuf>,
}

/// Resolves the table; `Err` names the key (below `otel.`) and what is wrong with it.
pub(crate) fn resolve_otel(
    toml: OtelToml,
    keel_home: &Path,
) -> Result<OtelSettings, (String, String)> {
    let resolve = |key: &str, exporter: Option<OtelExporterToml>| {
        exporter
            .map(|exporter| resolve_exporter(key, exporter, keel_home))
            .transpose()
            .map(|exporter| exporter.unwrap_or(OtelExporter::None))
    };
    Ok(OtelSettings {
        environment: toml
            .environment
            .filter(|environment| !environment.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_OTEL_ENVIRONMENT.to_string()),
        log_user_prompt: toml.log_user_prompt.unwrap_or(false),
        exporter: resolve("exporter", toml.exporter)?,
        trace_exporter: resolve("trace_exporter", toml.trace_exporter)?,
        metrics_exporter: resolve("metrics_exporter", toml.metrics_exporter)?,
    })
}

fn resolve_exporter(
    key: &str,
    exporter: OtelExporterToml,
    keel_home: &Path,
) -> Result<OtelExporter, (String, String)> {
    Ok(match exporter {
        OtelExporterToml::None => OtelExporter::None,
        OtelExporterToml::Statsig => OtelExporter::Statsig,
        OtelExporterToml::OtlpHttp(http) => {
            let key = format!("{key}.otlp-http");
            OtelExporter::OtlpHttp {
                endpoint: checked_endpoint(&key, http.endpoint, &["http", "https"])?,
                protocol: http.protocol,
                headers: http.headers,
                tls: http
                    .tls
                    .map(|tls| resolve_tls(&key, tls, keel_home))
                    .transpose()?,
            }
        }
        OtelExporterToml::OtlpGrpc(grpc) => {
            let key = format!("{key}.otlp-grpc");
            OtelExporter::OtlpGrpc {
                endpoint: checked_endpoint(&key, grpc.endpoint, &["http", "https"])?,
                headers: grpc.headers,
                tls: grpc
                    .tls
                    .map(|tls| resolve_tls(&key, tls, keel_home))
                    .transpose()?,
            }
        }
    })
}

/// An absolute URL of one of `schemes` with a host, so a typo fails at load.
fn checked_endpoint(
    key: &str,
    endpoint: String,
    schemes: &[&str],
) -> Result<String, (String, String)> {
    let key = format!("{key}.endpoint");
    match reqwest::Url::parse(&endpoint) {
        Ok(url) if schemes.contains(&url.scheme()) && url.host_str().is_some() => Ok(endpoint),
        Ok(url) => Err((
            key,
            format!(
                "`{endpoint}` is not an {} URL with a host (scheme `{}`)",
                schemes.join(" or "),
                url.scheme()
            ),
        )),
        Err(err) => Err((key, format!("`{endpoint}` is not a URL: {err}"))),
    }
}

fn resolve_tls(key: &str, tls: OtelTlsToml, keel_home: &Path) -> Result<OtelTls, (String, String)> {
    if tls.client_certificate.is_some() != tls.client_private_key.is_some() {
        return Err((
            format!("{key}.tls"),
            "`client-certificate` and `client-private-key` go together".to_string(),
        ));
    }
    let absolute = |path: Option<PathBuf>| path.map(|path| keel_home.join(path));
    Ok(OtelTls {
        ca_certificate: absolute(tls.ca_certificate),
        client_certificate: absolute(tls.client_certificate),
        client_private_key: absolute(tls.client_private_key),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<OtelSettings, (String, String)> {
        let toml: OtelToml = toml::from_str(text).map_err(|err| ("".into(), err.to_string()))?;
        resolve_otel(toml, Path::new("/home/keel"))
    }

    #[test]
    fn codex_shapes_resolve() -> Result<(), (String, String)> {
        let settings = parse(
            r#"
            environment = "staging"
            log_user_prompt = true
            exporter = { otlp-http = { endpoint = "http://127.0.0.1:4318/v1/logs", protocol = "json", headers = { "x-key" = "k" } } }
            trace_exporter = { otlp-grpc = { endpoint = "https://otel.example:4317", tls = { ca-certificate = "certs/ca.pem" } } }
            metrics_exporter = "statsig"
            "#,
        )?;
        assert_eq!(settings.environment, "staging");
        assert!(settings.log_user_prompt);
        assert!(matches!(
            &settings.exporter,
            OtelExporter::OtlpHttp { protocol: OtlpHttpProtocol::Json, headers, .. } if headers["x-key"] == "k"
        ));
        match &settings.trace_exporter {
            OtelExporter::OtlpGrpc { tls: Some(tls), .. } => assert_eq!(
                tls.ca_certificate.as_deref(),
                Some(Path::new("/home/keel/certs/ca.pem"))
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(settings.metrics_exporter, OtelExporter::Statsig);
        assert!(settings.exports_anything());
        assert!(settings.names_statsig());
        Ok(())
    }

    #[test]
    fn defaults_send_nothing() -> Result<(), (String, String)> {
        let settings = parse("")?;
        assert_eq!(settings, OtelSettings::default());
        assert!(!settings.exports_anything());
        Ok(())
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = parse(r#"exporter = { otlp-http = { endpoint = "localhost:4318" } }"#)
            .err()
            .map(|(key, _)| key);
        assert_eq!(err.as_deref(), Some("exporter.otlp-http.endpoint"));
        let err = parse(
            r#"exporter = { otlp-grpc = { endpoint = "http://h:4317", tls = { client-certificate = "c.pem" } } }"#,
        )
        .err()
        .map(|(key, _)| key);
        assert_eq!(err.as_deref(), Some("exporter.otlp-grpc.tls"));
    }
}
