//! `exec_server_url`: the model's commands run on a `keel exec-server` reached over a
//! websocket instead of in the engine's process; policy is still decided by the engine.

use keel_test_support::{ProcessBuilder, Turn, exec_command_call, shell_call};
use serde_json::json;

use super::run_with_config;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_on_the_configured_exec_server() -> anyhow::Result<()> {
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    let ws = tempfile::tempdir()?;
    let run = run_with_config(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({"cmd": "echo remote-marker-one", "login": false}),
            )]),
            Turn::new([shell_call("c2", ["echo", "remote-marker-two"])]),
        ],
        &[],
        &[("exec_server_url", url.clone().into())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.output("c1").contains("remote-marker-one"),
        "{}",
        run.output("c1")
    );
    assert!(
        run.output("c2").contains("remote-marker-two"),
        "{}",
        run.output("c2")
    );
    // Both commands were started by the remote server.
    for marker in ["remote-marker-one", "remote-marker-two"] {
        server
            .wait_for_stderr_line(marker, |line| {
                line.contains("started") && line.contains(marker)
            })
            .await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_exec_server_is_reported_to_the_model() -> anyhow::Result<()> {
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let ws = tempfile::tempdir()?;
    let run = run_with_config(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo never"}),
        )])],
        &[],
        &[("exec_server_url", format!("ws://127.0.0.1:{port}").into())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let output = run.output("c1");
    assert!(
        output.contains("could not reach the exec-server"),
        "{output}"
    );
    Ok(())
}

/// A TLS terminator on a loopback port in front of `backend`, with a certificate for
/// `localhost` made on the spot; returns its port and the certificate (PEM) to trust.
async fn tls_terminator(backend: String) -> anyhow::Result<(u16, String)> {
    use tokio_rustls::rustls;

    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.key_pair.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let port = keel_test_support::tls_front(acceptor, backend).await?;
    Ok((port, certified.cert.pem()))
}

/// `wss://`: the commands reach the exec-server through TLS when its certificate is trusted
/// (here through `SSL_CERT_FILE`, as for any system root), and a token may then go to it; an
/// untrusted certificate is refused and the model is told the server could not be reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_reach_an_exec_server_over_tls() -> anyhow::Result<()> {
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let (port, certificate) = tls_terminator(server.websocket_address().await?).await?;
    let trust = tempfile::tempdir()?;
    let trusted = trust.path().join("trusted.pem");
    std::fs::write(&trusted, certificate)?;
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let untrusted = trust.path().join("untrusted.pem");
    std::fs::write(&untrusted, other.cert.pem())?;
    let url = format!("wss://localhost:{port}");

    let ws = tempfile::tempdir()?;
    let run = run_with_config(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo tls-marker", "login": false}),
        )])],
        &[("SSL_CERT_FILE", &trusted.to_string_lossy())],
        &[("exec_server_url", url.clone().into())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.output("c1").contains("tls-marker"),
        "{}",
        run.output("c1")
    );
    server
        .wait_for_stderr_line("the command started remotely", |line| {
            line.contains("started") && line.contains("tls-marker")
        })
        .await?;

    let run = run_with_config(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo never-over-tls", "login": false}),
        )])],
        &[("SSL_CERT_FILE", &untrusted.to_string_lossy())],
        &[("exec_server_url", url.into())],
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let output = run.output("c1");
    assert!(
        output.contains("could not reach the exec-server"),
        "{output}"
    );
    assert!(!output.contains("never-over-tls\n"), "{output}");
    assert!(output.contains("invalid peer certificate"), "{output}");
    Ok(())
}

/// The exec-server dies while a command runs: the model is told the connection was lost and
/// that the command may have run, it is not run again, and the next command tries a new
/// connection (here there is no server any more, and the model is told so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_mid_command_is_reported_and_nothing_is_rerun() -> anyhow::Result<()> {
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    let ws = tempfile::tempdir()?;
    let marker = ws.path().join("runs");
    let config = [("exec_server_url", toml::Value::from(url))];
    let run = run_with_config(
        ws.path(),
        vec![
            Turn::new([exec_command_call(
                "c1",
                json!({
                    "cmd": format!("echo once >> '{}'; echo lost-marker; sleep 60", marker.display()),
                    "login": false,
                    "yield_time_ms": 30000,
                }),
            )]),
            Turn::new([exec_command_call(
                "c2",
                json!({"cmd": "echo after-the-loss", "login": false}),
            )]),
        ],
        &[],
        &config,
    );
    let kill = async {
        server
            .wait_for_stderr_line("the long command", |line| {
                line.contains("started") && line.contains("lost-marker")
            })
            .await?;
        server.signal(nix::sys::signal::Signal::SIGKILL)?;
        anyhow::Ok(())
    };
    let (run, killed) = tokio::join!(run, kill);
    killed?;
    let run = run?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lost = run.output("c1");
    assert!(
        lost.contains("connection to the exec-server was lost"),
        "{lost}"
    );
    // Lost before or after the server answered the start: either way, what is known.
    assert!(
        lost.contains("may have finished") || lost.contains("may have started"),
        "{lost}"
    );
    assert!(lost.contains("not run again"), "{lost}");
    let after = run.output("c2");
    assert!(after.contains("could not reach the exec-server"), "{after}");
    // The command ran at most once (the server may have been killed before its first line
    // ran): the loss made nobody start it again.
    let runs = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(runs.is_empty() || runs == "once\n", "{runs:?}");
    Ok(())
}

/// `[environments.<id>]` names an exec-server and where its token is (here a file); choosing it
/// with `environment` runs the commands there, an app-server thread started with
/// `{"environment": ID}` in its `config` reports it, and an undefined name stops the run at
/// load with the defined names listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_environment_runs_the_commands_with_its_token_file() -> anyhow::Result<()> {
    let secrets = tempfile::tempdir()?;
    let token_file = secrets.path().join("build-box.token");
    std::fs::write(&token_file, "named-env-token\n")?;
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token_file.to_string_lossy().as_ref())
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    let environment = |chosen: &str| {
        vec![
            ("environment", toml::Value::from(chosen)),
            ("environments.build-box.url", url.clone().into()),
            (
                "environments.build-box.auth_token_file",
                token_file.to_string_lossy().into_owned().into(),
            ),
        ]
    };
    let ws = tempfile::tempdir()?;
    let run = run_with_config(
        ws.path(),
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo named-env-marker", "login": false}),
        )])],
        &[],
        &environment("build-box"),
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.output("c1").contains("named-env-marker"),
        "{}",
        run.output("c1")
    );
    server
        .wait_for_stderr_line("the command on the named environment", |line| {
            line.contains("started") && line.contains("named-env-marker")
        })
        .await?;

    // An app-server thread that chooses it reports it as its environment.
    let world = crate::suite::app_server::common::World::new(
        keel_test_support::Script::new([]),
        &environment("local"),
    )
    .await?;
    let mut app = world.server().await?;
    let started = app
        .request(
            "thread/start",
            json!({"cwd": world.ws(), "config": {"environment": "build-box"}}),
        )
        .await?;
    assert_eq!(
        started["thread"]["environments"][0]["environmentId"], "build-box",
        "{started}"
    );
    let local = app.request("thread/start", world.thread_params()).await?;
    assert_eq!(
        local["thread"]["environments"][0]["environmentId"], "local",
        "{local}"
    );

    // A name nothing defines: the run stops at load, saying which names exist.
    let run = run_with_config(ws.path(), Vec::new(), &[], &environment("gpu-box")).await?;
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("no environment `gpu-box`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("local, build-box"), "{}", run.stderr);
    Ok(())
}
