//! OTLP over TLS as configured: a collector behind its own CA that wants a client
//! certificate gets everything with the configured certificates and nothing without them.

use keel_test_support::{MockModelServer, OtlpReceiver, OtlpTransport, write_config};

use super::exec::keel_exec;
use super::otel::{WAIT, events, one_turn_with_a_command, otlp};

/// A certificate authority for a collector, with a server certificate for `localhost` and a
/// client certificate, made on the spot.
struct TestCa {
    ca: rcgen::Certificate,
    server: rcgen::Certificate,
    server_key: rcgen::KeyPair,
    client: rcgen::Certificate,
    client_key: rcgen::KeyPair,
}

impl TestCa {
    fn new() -> anyhow::Result<Self> {
        let ca_key = rcgen::KeyPair::generate()?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key)?;
        let server_key = rcgen::KeyPair::generate()?;
        let server = rcgen::CertificateParams::new(vec!["localhost".to_string()])?.signed_by(
            &server_key,
            &ca,
            &ca_key,
        )?;
        let client_key = rcgen::KeyPair::generate()?;
        let client = rcgen::CertificateParams::new(vec!["keel-client".to_string()])?.signed_by(
            &client_key,
            &ca,
            &ca_key,
        )?;
        Ok(Self {
            ca,
            server,
            server_key,
            client,
            client_key,
        })
    }

    /// A TLS terminator on a loopback port in front of `backend` that offers `alpn` and
    /// wants a client certificate from this CA; returns its port.
    async fn terminator(&self, backend: String, alpn: &[u8]) -> anyhow::Result<u16> {
        use tokio_rustls::rustls;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone())?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            provider.clone(),
        )
        .build()?;
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.server_key.serialize_der().into());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![self.server.der().clone()], key)?;
        config.alpn_protocols = vec![alpn.to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        Ok(keel_test_support::tls_front(acceptor, backend).await?)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exporters_speak_mutual_tls_with_the_configured_certificates() -> anyhow::Result<()> {
    let receiver = OtlpReceiver::start().await?;
    let ca = TestCa::new()?;
    let http_backend = receiver
        .http_endpoint("logs")
        .trim_start_matches("http://")
        .trim_end_matches("/v1/logs")
        .to_string();
    let grpc_backend = receiver
        .grpc_endpoint()
        .trim_start_matches("http://")
        .to_string();
    let https = ca.terminator(http_backend, b"http/1.1").await?;
    let grpcs = ca.terminator(grpc_backend, b"h2").await?;
    let home = tempfile::tempdir()?;
    let cwd = tempfile::tempdir()?;
    // Relative paths: resolved against the Keel home, as Codex resolves them against its own.
    let certs = home.path().join("certs");
    std::fs::create_dir_all(&certs)?;
    std::fs::write(certs.join("ca.pem"), ca.ca.pem())?;
    std::fs::write(certs.join("client.pem"), ca.client.pem())?;
    std::fs::write(certs.join("client-key.pem"), ca.client_key.serialize_pem())?;
    let tls = r#"tls = { ca-certificate = "certs/ca.pem", client-certificate = "certs/client.pem", client-private-key = "certs/client-key.pem" }"#;
    let exporters = |with_tls: bool| -> anyhow::Result<Vec<(&'static str, toml::Value)>> {
        let tls = if with_tls { tls } else { "" };
        Ok(vec![
            (
                "otel.exporter",
                otlp(
                    "otlp-http",
                    &format!("https://localhost:{https}/v1/logs"),
                    tls,
                )?,
            ),
            (
                "otel.trace_exporter",
                otlp("otlp-grpc", &format!("https://localhost:{grpcs}"), tls)?,
            ),
        ])
    };

    // Without the CA and the client certificate nothing gets through, and the turn is fine.
    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    write_config(home.path(), &mock.uri(), exporters(false)?)?;
    let out = keel_exec(home.path(), cwd.path(), &["untrusted"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(receiver.logs().is_empty() && receiver.spans().is_empty());

    let mock = MockModelServer::start(one_turn_with_a_command()).await?;
    write_config(home.path(), &mock.uri(), exporters(true)?)?;
    let out = keel_exec(home.path(), cwd.path(), &["over tls"], None).await?;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    receiver
        .wait_until("log events and spans through TLS", WAIT, |receiver| {
            !events(&receiver.logs(), "codex.tool_result").is_empty()
                && receiver
                    .spans()
                    .iter()
                    .any(|span| span.name == "invoke_agent keel")
        })
        .await?;
    assert!(
        receiver
            .logs()
            .iter()
            .all(|log| log.transport == OtlpTransport::HttpProtobuf)
    );
    assert!(
        receiver
            .spans()
            .iter()
            .all(|span| span.transport == OtlpTransport::Grpc)
    );
    Ok(())
}
