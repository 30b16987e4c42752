//! Who may connect to `keel app-server --listen ws://…` and `keel exec-server --listen ws://…`,
//! probed as an attacker would: without a token, with a wrong one, with an expired or
//! misaddressed JWT, with a foreign `Host`, and against a server asked to listen on the
//! network without authentication.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use keel_test_support::{JsonLinesProcess, ProcessBuilder, Turn, exec_command_call};
use serde_json::{Value, json};
use sha2::Digest;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::suite::unified_exec::run_with_config;

const WAIT: Duration = Duration::from_secs(20);
const SECRET: &[u8] = b"a-shared-secret-of-at-least-32-bytes";

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A refused upgrade: the HTTP status and the body the server sent.
#[derive(Debug)]
struct Refused {
    status: u16,
    body: String,
}

/// Opens a websocket to `addr` with the given headers; a refusal is returned as such.
async fn upgrade(addr: &str, headers: &[(&str, &str)]) -> anyhow::Result<Result<Socket, Refused>> {
    let mut request = format!("ws://{addr}/").into_client_request()?;
    for (name, value) in headers {
        let name = tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes())?;
        request.headers_mut().insert(name, value.parse()?);
    }
    match tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request)).await? {
        Ok((socket, _)) => Ok(Ok(socket)),
        Err(WsError::Http(response)) => Ok(Err(Refused {
            status: response.status().as_u16(),
            body: String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                .into_owned(),
        })),
        Err(other) => Err(other.into()),
    }
}

/// The refusal of an upgrade that must be refused; `what` names the attempt otherwise.
async fn refusal(addr: &str, headers: &[(&str, &str)], what: &str) -> anyhow::Result<Refused> {
    match upgrade(addr, headers).await? {
        Ok(_) => anyhow::bail!("accepted: {what}"),
        Err(refused) => Ok(refused),
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Sends `initialize` and returns the answer: proof the connection reached JSON-RPC.
async fn initialize(socket: &mut Socket, params: Value) -> anyhow::Result<Value> {
    let request = json!({"id": 1, "method": "initialize", "params": params});
    socket
        .send(Message::Text(request.to_string().into()))
        .await?;
    loop {
        let frame = tokio::time::timeout(WAIT, socket.next())
            .await?
            .ok_or_else(|| anyhow::anyhow!("socket closed before the answer"))??;
        if let Message::Text(text) = frame {
            let value: Value = serde_json::from_str(text.as_str())?;
            if value["id"] == 1 {
                return Ok(value);
            }
        }
    }
}

fn app_server_initialize() -> Value {
    json!({"clientInfo": {"name": "auth-test", "version": "1"}})
}

/// `keel app-server` on a loopback port with `flags`, in an empty Keel home.
async fn app_server(
    home: &tempfile::TempDir,
    flags: &[&str],
) -> anyhow::Result<(JsonLinesProcess, String)> {
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(flags.iter().copied())
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .spawn()?;
    let addr = server.websocket_address().await?;
    Ok((server, addr))
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() as i64)
        .unwrap_or_default()
}

/// What the token issuer (not Keel) does: sign claims with the shared secret.
fn mint(claims: Value) -> anyhow::Result<String> {
    Ok(jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET),
    )?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_token_is_required_and_rotates_without_a_restart() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let token_file = home.path().join("ws-token");
    std::fs::write(&token_file, "first-token\n")?;
    let token_path = token_file.to_string_lossy().into_owned();
    let (_server, addr) = app_server(
        &home,
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            &token_path,
        ],
    )
    .await?;

    let refused = refusal(&addr, &[], "no token").await?;
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(refused.body.contains("missing bearer token"), "{refused:?}");
    for wrong in [
        "Bearer wrong-token",
        "first-token",
        "Basic Zmlyc3QtdG9rZW4=",
    ] {
        let refused = refusal(&addr, &[("authorization", wrong)], "a wrong token").await?;
        assert_eq!(refused.status, 401, "{wrong}: {refused:?}");
    }

    let mut socket = upgrade(&addr, &[("authorization", &bearer("first-token"))])
        .await?
        .map_err(|refused| anyhow::anyhow!("{refused:?}"))?;
    let answer = initialize(&mut socket, app_server_initialize()).await?;
    assert!(answer["result"]["userAgent"].is_string(), "{answer}");

    // Rotated by replacing the file: the old token stops working at once, the new one works.
    std::fs::write(&token_file, "second-token")?;
    let refused = refusal(
        &addr,
        &[("authorization", &bearer("first-token"))],
        "the old token",
    )
    .await?;
    assert_eq!(refused.status, 401);
    let mut socket = upgrade(&addr, &[("authorization", &bearer("second-token"))])
        .await?
        .map_err(|refused| anyhow::anyhow!("{refused:?}"))?;
    initialize(&mut socket, app_server_initialize()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_digest_is_accepted_instead_of_the_token() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let digest: String = sha2::Sha256::digest(b"digest-token")
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let (_server, addr) = app_server(
        &home,
        &[
            "--ws-auth",
            "capability-token",
            "--ws-token-sha256",
            &digest,
        ],
    )
    .await?;
    let refused = refusal(
        &addr,
        &[("authorization", &bearer(&digest))],
        "the digest is not the token",
    )
    .await?;
    assert_eq!(refused.status, 401);
    let mut socket = upgrade(&addr, &[("authorization", &bearer("digest-token"))])
        .await?
        .map_err(|refused| anyhow::anyhow!("{refused:?}"))?;
    initialize(&mut socket, app_server_initialize()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_jwt_must_be_current_and_addressed_to_this_server() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let secret_file = home.path().join("jwt-secret");
    std::fs::write(&secret_file, SECRET)?;
    let secret_path = secret_file.to_string_lossy().into_owned();
    let (_server, addr) = app_server(
        &home,
        &[
            "--ws-auth",
            "signed-bearer-token",
            "--ws-shared-secret-file",
            &secret_path,
            "--ws-issuer",
            "keel-test-issuer",
            "--ws-audience",
            "keel-app-server",
        ],
    )
    .await?;
    let good = json!({"iss": "keel-test-issuer", "aud": "keel-app-server", "exp": now() + 300});
    let cases = [
        (
            json!({"iss": "keel-test-issuer", "aud": "keel-app-server", "exp": now() - 600}),
            "expired",
        ),
        (
            json!({"iss": "keel-test-issuer", "aud": "another-server", "exp": now() + 300}),
            "audience",
        ),
        (
            json!({"iss": "someone-else", "aud": "keel-app-server", "exp": now() + 300}),
            "issuer",
        ),
        (
            json!({"iss": "keel-test-issuer", "aud": "keel-app-server"}),
            "invalid bearer token",
        ),
    ];
    for (claims, reason) in cases {
        let token = mint(claims.clone())?;
        let refused = refusal(
            &addr,
            &[("authorization", &bearer(&token))],
            &claims.to_string(),
        )
        .await?;
        assert_eq!(refused.status, 401, "{claims}: {refused:?}");
        assert!(refused.body.contains(reason), "{claims}: {refused:?}");
    }
    // Signed with another secret: a forgery.
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &good,
        &jsonwebtoken::EncodingKey::from_secret(b"not-the-shared-secret-not-the-shared"),
    )?;
    let refused = refusal(
        &addr,
        &[("authorization", &bearer(&forged))],
        "a forged token",
    )
    .await?;
    assert_eq!(refused.status, 401);

    let mut socket = upgrade(&addr, &[("authorization", &bearer(&mint(good)?))])
        .await?
        .map_err(|refused| anyhow::anyhow!("{refused:?}"))?;
    initialize(&mut socket, app_server_initialize()).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_listener_refuses_foreign_hosts_and_browsers() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let (_server, addr) = app_server(&home, &["--ws-allowed-host", "keel.proxy.example"]).await?;
    keel_core::install_tls_provider();
    let client = reqwest::Client::new();
    for path in ["readyz", "healthz"] {
        let rebound = client
            .get(format!("http://{addr}/{path}"))
            .header("host", "evil.example")
            .send()
            .await?;
        assert_eq!(rebound.status().as_u16(), 403, "{path}");
        let proxied = client
            .get(format!("http://{addr}/{path}"))
            .header("host", "keel.proxy.example:443")
            .send()
            .await?;
        assert_eq!(proxied.status().as_u16(), 200, "{path}");
        let direct = client.get(format!("http://{addr}/{path}")).send().await?;
        assert_eq!(direct.status().as_u16(), 200, "{path}");
    }
    let refused = refusal(&addr, &[("host", "evil.example")], "a rebound host").await?;
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(refused.body.contains("evil.example"), "{refused:?}");
    let refused = refusal(&addr, &[("origin", "http://127.0.0.1")], "a browser").await?;
    assert_eq!(refused.status, 403, "{refused:?}");
    let mut socket = upgrade(&addr, &[])
        .await?
        .map_err(|refused| anyhow::anyhow!("{refused:?}"))?;
    initialize(&mut socket, app_server_initialize()).await?;
    Ok(())
}

/// Runs `keel ARGS` to completion and returns its exit code and stderr.
async fn run_keel(args: &[&str], home: &std::path::Path) -> anyhow::Result<(Option<i32>, String)> {
    let output = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(args)
            .env("KEEL_HOME", home)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await??;
    Ok((
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_refuse_to_listen_on_the_network_without_authentication() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    for server in ["app-server", "exec-server"] {
        for address in ["ws://0.0.0.0:0", "ws://[::]:0"] {
            let (code, stderr) = run_keel(&[server, "--listen", address], home.path()).await?;
            assert_eq!(code, Some(2), "{server} {address}: {stderr}");
            assert!(
                stderr.contains("without authentication") && stderr.contains("--ws-auth"),
                "{server}: {stderr}"
            );
        }
        let (code, stderr) = run_keel(
            &[
                server,
                "--listen",
                "ws://127.0.0.1:0",
                "--ws-auth",
                "capability-token",
            ],
            home.path(),
        )
        .await?;
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("--ws-token-file"), "{stderr}");
        let (code, stderr) = run_keel(
            &[
                server,
                "--ws-auth",
                "capability-token",
                "--ws-token-sha256",
                &"0".repeat(64),
            ],
            home.path(),
        )
        .await?;
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("stdio has no handshake"), "{stderr}");
    }
    let short = home.path().join("short-secret");
    std::fs::write(&short, "short")?;
    let (code, stderr) = run_keel(
        &[
            "exec-server",
            "--listen",
            "ws://127.0.0.1:0",
            "--ws-auth",
            "signed-bearer-token",
            "--ws-shared-secret-file",
            &short.to_string_lossy(),
        ],
        home.path(),
    )
    .await?;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("at least 32 are required"), "{stderr}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_sends_its_token_to_a_protected_exec_server() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let token_file = dir.path().join("exec-token");
    std::fs::write(&token_file, "exec-server-token")?;
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["exec-server", "--listen", "ws://127.0.0.1:0"])
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(token_file.to_string_lossy().as_ref())
        .env("KEEL_LOG", "keel_exec_server=debug")
        .spawn()?;
    let url = format!("ws://{}", server.websocket_address().await?);
    let refused = refusal(url.trim_start_matches("ws://"), &[], "no token").await?;
    assert_eq!(refused.status, 401);

    let ws = tempfile::tempdir()?;
    let config = [
        ("exec_server_url", toml::Value::from(url.clone())),
        ("exec_server_auth_token_env", "KEEL_TEST_EXEC_TOKEN".into()),
    ];
    let turn = || {
        vec![Turn::new([exec_command_call(
            "c1",
            json!({"cmd": "echo authenticated-marker", "login": false}),
        )])]
    };
    let run = run_with_config(
        ws.path(),
        turn(),
        &[("KEEL_TEST_EXEC_TOKEN", "exec-server-token")],
        &config,
    )
    .await?;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.output("c1").contains("authenticated-marker"),
        "{}",
        run.output("c1")
    );
    server
        .wait_for_stderr_line("the started command", |line| {
            line.contains("started") && line.contains("authenticated-marker")
        })
        .await?;

    // A wrong token: the model is told the server refused, and nothing runs.
    let run = run_with_config(
        ws.path(),
        turn(),
        &[("KEEL_TEST_EXEC_TOKEN", "wrong")],
        &config,
    )
    .await?;
    let output = run.output("c1");
    assert!(output.contains("401"), "{output}");
    assert!(!output.contains("authenticated-marker\n"), "{output}");
    // No variable at all: the message names the setting.
    let run = run_with_config(ws.path(), turn(), &[], &config).await?;
    let output = run.output("c1");
    assert!(output.contains("KEEL_TEST_EXEC_TOKEN"), "{output}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_server_listens_on_a_private_unix_socket() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;

    let home = tempfile::tempdir()?;
    let mut server = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen", "unix://"])
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .spawn()?;
    server
        .wait_for_stderr_line("the socket path", |line| {
            line.contains("listening on unix://")
        })
        .await?;
    let path = home.path().join("app-server-control/app-server.sock");
    let mode = |path: &std::path::Path| -> anyhow::Result<u32> {
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o777)
    };
    assert_eq!(mode(&path)?, 0o600);
    assert_eq!(mode(&home.path().join("app-server-control"))?, 0o700);

    let stream = tokio::net::UnixStream::connect(&path).await?;
    let (mut socket, _) = tokio_tungstenite::client_async("ws://localhost/", stream).await?;
    let request = json!({"id": 1, "method": "initialize", "params": app_server_initialize()});
    socket
        .send(Message::Text(request.to_string().into()))
        .await?;
    let answer = loop {
        let frame = tokio::time::timeout(WAIT, socket.next())
            .await?
            .ok_or_else(|| anyhow::anyhow!("closed"))??;
        if let Message::Text(text) = frame {
            break serde_json::from_str::<Value>(text.as_str())?;
        }
    };
    assert!(answer["result"]["userAgent"].is_string(), "{answer}");

    // A second server on the same socket is refused while the first lives.
    let (code, stderr) = run_keel(&["app-server", "--listen", "unix://"], home.path()).await?;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("already listening"), "{stderr}");

    server.signal(nix::sys::signal::Signal::SIGTERM)?;
    let status = tokio::time::timeout(WAIT, server.wait()).await??;
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "the socket is removed on shutdown");
    Ok(())
}
