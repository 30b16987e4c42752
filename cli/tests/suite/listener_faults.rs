//! Listener faults probed as an attacker would. A flood of connections that never send a
//! token: 1,100 idle TCP connections against `keel app-server --listen ws://…` and `keel
//! exec-server --listen ws://…` started with a hard limit of 1,024 open files; the token
//! holder still connects and gets an answer (connections still in their handshake are capped,
//! the oldest closed for a newer one, and time out). A unix socket path that holds a file is
//! refused and the file kept; a token file others can read is warned about.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use futures::{SinkExt, StreamExt};
use keel_test_support::ProcessBuilder;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const WAIT: Duration = Duration::from_secs(30);
const FLOOD: usize = 1100;
const TOKEN: &str = "the-token-holder";

/// Opens `count` TCP connections to `port` and holds them until its stdin closes. A separate
/// process, so this test's own descriptors are not the ones that run out.
const FLOODER: &str = r#"
import resource, socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
print("holding", len(held), flush=True)
sys.stdin.read()
"#;

/// Starts the flood and returns once every connection is open.
async fn flood(addr: &str) -> anyhow::Result<tokio::process::Child> {
    let port = addr.rsplit(':').next().context("no port")?;
    let mut child = tokio::process::Command::new("python3")
        .args(["-c", FLOODER, port, &FLOOD.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().context("no stdout")?;
    let line = tokio::time::timeout(WAIT, BufReader::new(stdout).lines().next_line())
        .await
        .context("the flood did not open its connections")??;
    anyhow::ensure!(
        line.as_deref() == Some(&format!("holding {FLOOD}")),
        "{line:?}"
    );
    Ok(child)
}

/// The token holder: upgrade with the token, `initialize`, and the answer.
async fn token_holder(addr: &str, params: Value) -> anyhow::Result<Value> {
    let mut request = format!("ws://{addr}/").into_client_request()?;
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse()?);
    let (mut socket, _) = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request))
        .await
        .context("the token holder's upgrade got no answer")??;
    let initialize = json!({"id": 1, "method": "initialize", "params": params});
    socket
        .send(Message::Text(initialize.to_string().into()))
        .await?;
    loop {
        let frame = tokio::time::timeout(WAIT, socket.next())
            .await
            .context("no answer to initialize")?
            .context("closed before the answer")??;
        if let Message::Text(text) = frame {
            let value: Value = serde_json::from_str(text.as_str())?;
            if value["id"] == 1 {
                return Ok(value);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(keel_python3), ignore = "needs python3 on PATH")]
async fn a_flood_of_idle_connections_does_not_lock_out_the_token_holder() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let token_file = home.path().join("token");
    std::fs::write(&token_file, TOKEN)?;
    let token_path = token_file.to_string_lossy().into_owned();
    for (server, params) in [
        (
            "app-server",
            json!({"clientInfo": {"name": "flood-test", "version": "1"}}),
        ),
        ("exec-server", json!({"clientName": "flood-test"})),
    ] {
        let mut process = ProcessBuilder::new("prlimit")
            .args([
                "--nofile=1024:1024",
                "--",
                env!("CARGO_BIN_EXE_keel"),
                server,
            ])
            .args(["--listen", "ws://127.0.0.1:0"])
            .args([
                "--ws-auth",
                "capability-token",
                "--ws-token-file",
                &token_path,
            ])
            .env("KEEL_HOME", home.path())
            .env_remove("RUST_LOG")
            .spawn()?;
        let addr = process.websocket_address().await?;
        let mut flood = flood(&addr).await?;
        let answer = token_holder(&addr, params).await?;
        assert!(answer.get("result").is_some(), "{server}: {answer}");
        if let Some(mut stdin) = flood.stdin.take() {
            stdin.shutdown().await?;
        }
        flood.kill().await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_at_the_socket_path_is_kept_and_a_shared_token_file_is_warned_about()
-> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir()?;
    let precious = home.path().join("notes.txt");
    std::fs::write(&precious, "do not delete\n")?;
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen"])
        .arg(format!("unix://{}", precious.display()))
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(WAIT, out).await??;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("is not a socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&precious)?, "do not delete\n");

    // A token file anyone can read: the server starts, and says so.
    let token_file = home.path().join("shared-token");
    std::fs::write(&token_file, TOKEN)?;
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644))?;
    let socket = home.path().join("control/app.sock");
    let mut process = ProcessBuilder::new(env!("CARGO_BIN_EXE_keel"))
        .args(["app-server", "--listen"])
        .arg(format!("unix://{}", socket.display()))
        .args(["--ws-auth", "capability-token", "--ws-token-file"])
        .arg(&token_file)
        .env("KEEL_HOME", home.path())
        .env_remove("RUST_LOG")
        .spawn()?;
    process
        .wait_for_stderr_line("the listening line", |line| {
            line.contains("listening on unix://")
        })
        .await?;
    assert!(
        process.stderr().contains("readable by other users"),
        "{}",
        process.stderr()
    );
    let mode = std::fs::metadata(&socket)?.permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    Ok(())
}
