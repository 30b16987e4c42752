//! A client on another address: two network namespaces this test creates, joined by a veth
//! pair, with the server listening on one side's address and a plain client (Python's
//! standard library, so nothing of Keel's own client helps it) on the other. Needs root;
//! skipped elsewhere unless `CI` is set, where it must run.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use keel_test_support::{JsonLinesProcess, ProcessBuilder};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Two namespaces, `server` (10.231.N.1) and `client` (10.231.N.2), removed on drop.
struct NamespacePair {
    server: String,
    client: String,
    server_ip: String,
}

/// Runs `ip ARGS`, or says what failed.
pub(crate) fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|err| format!("ip: {err}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

impl NamespacePair {
    fn create() -> Result<Self, String> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{n}", std::process::id() % 100_000);
        let pair = Self {
            server: format!("keel-srv-{tag}"),
            client: format!("keel-cli-{tag}"),
            server_ip: format!("10.231.{}.1", n % 250),
        };
        let client_ip = format!("10.231.{}.2/24", n % 250);
        let (veth_server, veth_client) = (format!("ks{tag}"), format!("kc{tag}"));
        ip(&["netns", "add", &pair.server])?;
        ip(&["netns", "add", &pair.client])?;
        ip(&[
            "link",
            "add",
            &veth_server,
            "type",
            "veth",
            "peer",
            "name",
            &veth_client,
        ])?;
        ip(&["link", "set", &veth_server, "netns", &pair.server])?;
        ip(&["link", "set", &veth_client, "netns", &pair.client])?;
        let server_cidr = format!("{}/24", pair.server_ip);
        ip(&[
            "-n",
            &pair.server,
            "addr",
            "add",
            &server_cidr,
            "dev",
            &veth_server,
        ])?;
        ip(&[
            "-n",
            &pair.client,
            "addr",
            "add",
            &client_ip,
            "dev",
            &veth_client,
        ])?;
        for (ns, dev) in [(&pair.server, &veth_server), (&pair.client, &veth_client)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(pair)
    }

    /// Creates the pair, or says why the test is skipped (outside CI) or fails (in CI).
    fn create_or_skip() -> anyhow::Result<Option<Self>> {
        match Self::create() {
            Ok(pair) => Ok(Some(pair)),
            Err(why) if std::env::var_os("CI").is_none() => {
                eprintln!(
                    "skipped: cannot create network namespaces here ({why}); .ci/run runs as root"
                );
                Ok(None)
            }
            Err(why) => {
                anyhow::bail!("cannot create network namespaces ({why}); this test needs root")
            }
        }
    }

    /// `keel ARGS` inside the server namespace.
    fn server_process(&self, args: &[&str]) -> ProcessBuilder {
        ProcessBuilder::new("ip")
            .args(["netns", "exec", &self.server, env!("CARGO_BIN_EXE_keel")])
            .args(args.iter().copied())
            .env_remove("RUST_LOG")
    }

    /// Runs the probe client in the client namespace: the status line, then the answer.
    async fn probe(
        &self,
        port: &str,
        token: Option<&str>,
        message: &Value,
    ) -> anyhow::Result<Vec<String>> {
        let script: PathBuf = [
            env!("CARGO_MANIFEST_DIR"),
            "tests",
            "fixtures",
            "ws_probe.py",
        ]
        .iter()
        .collect();
        let output = tokio::time::timeout(
            WAIT,
            tokio::process::Command::new("ip")
                .args(["netns", "exec", &self.client, "python3"])
                .arg(script)
                .args([&self.server_ip, port, token.unwrap_or("-")])
                .arg(message.to_string())
                .kill_on_drop(true)
                .output(),
        )
        .await??;
        anyhow::ensure!(
            output.status.success(),
            "probe failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?
            .lines()
            .map(str::to_string)
            .collect())
    }
}

impl Drop for NamespacePair {
    fn drop(&mut self) {
        // Deleting a namespace also deletes the veth end inside it, and with it the pair.
        for ns in [&self.server, &self.client] {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

async fn port_of(server: &mut JsonLinesProcess) -> anyhow::Result<String> {
    let address = server.websocket_address().await?;
    Ok(address.rsplit(':').next().unwrap_or_default().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_on_another_address_needs_the_token() -> anyhow::Result<()> {
    let Some(pair) = NamespacePair::create_or_skip()? else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "network-token")?;
    let token_path = token_file.to_string_lossy().into_owned();
    let listen = format!("ws://{}:0", pair.server_ip);
    let pwn = json!({"id": 1, "method": "initialize", "params": {"clientName": "attacker"}});

    // Without authentication neither server starts on the namespace's address.
    for server in ["exec-server", "app-server"] {
        let mut open = pair
            .server_process(&[server, "--listen", &listen])
            .env("KEEL_HOME", dir.path())
            .spawn()?;
        let status = tokio::time::timeout(WAIT, open.wait()).await??;
        assert_eq!(status.code(), Some(2), "{server}: {}", open.stderr());
    }

    // exec-server with a token: a client without it, or with a wrong one, never reaches
    // JSON-RPC; with it, the handshake and a command work.
    let mut server = pair
        .server_process(&[
            "exec-server",
            "--listen",
            &listen,
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            &token_path,
        ])
        .spawn()?;
    let port = port_of(&mut server).await?;
    for token in [None, Some("wrong-token")] {
        let lines = pair.probe(&port, token, &pwn).await?;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(" 401 "), "{lines:?}");
    }
    let lines = pair.probe(&port, Some("network-token"), &pwn).await?;
    assert!(lines[0].contains(" 101 "), "{lines:?}");
    let answer: Value = serde_json::from_str(&lines[1])?;
    assert_eq!(
        answer["result"]["protocolVersion"], "exec-server.v0",
        "{answer}"
    );

    // The app-server, the same way.
    let mut app = pair
        .server_process(&[
            "app-server",
            "--listen",
            &listen,
            "--ws-auth",
            "capability-token",
            "--ws-token-file",
            &token_path,
        ])
        .env("KEEL_HOME", dir.path())
        .spawn()?;
    let port = port_of(&mut app).await?;
    let initialize = json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "probe", "version": "1"}}});
    let lines = pair.probe(&port, None, &initialize).await?;
    assert!(lines[0].contains(" 401 "), "{lines:?}");
    let lines = pair
        .probe(&port, Some("network-token"), &initialize)
        .await?;
    assert!(lines[0].contains(" 101 "), "{lines:?}");
    let answer: Value = serde_json::from_str(&lines[1])?;
    assert!(answer["result"]["userAgent"].is_string(), "{answer}");
    Ok(())
}
