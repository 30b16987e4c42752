//! Starting the real `keel-exec-server` binary, raw JSON-line peers, and waiting helpers.
//! Every wait is bounded by a deadline; nothing sleeps to synchronise.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use keel_exec_server::{ExecServerClient, ExecServerClientOptions, ExecServerEvent};
use keel_protocol::ExecSessionId;
use keel_protocol::exec_server::{ExecOutputStream, ExecParams};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::broadcast;

/// Generous bound for anything that should happen "soon" on a busy 2-core machine.
pub const DEADLINE: Duration = Duration::from_secs(30);

pub const BIN: &str = env!("CARGO_BIN_EXE_keel-exec-server");

/// Which transport a test speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    WebSocket,
}

/// A running server binary (killed on drop) and what is needed to connect to it.
pub struct Server {
    pub child: Child,
    /// `ws://...` for websocket servers.
    pub url: Option<String>,
    stdio: Option<(ChildStdout, ChildStdin)>,
}

impl Server {
    /// Starts the binary with extra flags on the given transport.
    pub async fn start(transport: Transport, flags: &[&str]) -> anyhow::Result<Self> {
        let listen = match transport {
            Transport::Stdio => "stdio://",
            Transport::WebSocket => "ws://127.0.0.1:0",
        };
        let mut child = Command::new(BIN)
            .args(["--listen", listen])
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {BIN}"))?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut stderr = BufReader::new(stderr).lines();
        let url = match transport {
            Transport::Stdio => None,
            Transport::WebSocket => {
                let line = tokio::time::timeout(DEADLINE, async {
                    while let Some(line) = stderr.next_line().await? {
                        if let Some(address) = line.strip_prefix("listening on ") {
                            return anyhow::Ok(address.to_string());
                        }
                    }
                    bail!("server exited before printing its address")
                })
                .await
                .context("waiting for `listening on`")??;
                Some(line)
            }
        };
        // Keep draining stderr so the server never blocks on it; echo it for failing tests.
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                eprintln!("[server] {line}");
            }
        });
        let stdio = match (child.stdout.take(), child.stdin.take()) {
            (Some(stdout), Some(stdin)) => Some((stdout, stdin)),
            _ => None,
        };
        Ok(Self { child, url, stdio })
    }

    /// Connects the library client (stdio can be connected once).
    pub async fn client(&mut self) -> anyhow::Result<ExecServerClient> {
        let options = ExecServerClientOptions {
            client_name: "tests".to_string(),
            ..ExecServerClientOptions::default()
        };
        match &self.url {
            Some(url) => Ok(ExecServerClient::connect_websocket(url, options).await?),
            None => {
                let (stdout, stdin) = self.stdio.take().context("stdio already taken")?;
                Ok(ExecServerClient::connect_stdio(stdout, stdin, options).await?)
            }
        }
    }

    /// A raw JSON peer (stdio can be connected once).
    pub async fn raw(&mut self) -> anyhow::Result<RawPeer> {
        match &self.url {
            Some(url) => RawPeer::websocket(url, &[]).await,
            None => {
                let (stdout, stdin) = self.stdio.take().context("stdio already taken")?;
                Ok(RawPeer::Stdio {
                    lines: BufReader::new(stdout).lines(),
                    stdin: Some(stdin),
                })
            }
        }
    }

    /// Waits for the server process to exit.
    pub async fn exited(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        Ok(tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .context("server did not exit")??)
    }
}

type WsStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A peer that sends and reads raw JSON-RPC text.
pub enum RawPeer {
    Stdio {
        lines: tokio::io::Lines<BufReader<ChildStdout>>,
        stdin: Option<ChildStdin>,
    },
    WebSocket(Box<WsStream>),
}

impl RawPeer {
    /// Opens a websocket with extra request headers.
    pub async fn websocket(url: &str, headers: &[(&str, &str)]) -> anyhow::Result<Self> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut request = url.into_client_request()?;
        for (name, value) in headers {
            request.headers_mut().insert(
                tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes())?,
                value.parse()?,
            );
        }
        let (stream, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(Self::WebSocket(Box::new(stream)))
    }

    pub async fn send_text(&mut self, text: &str) -> anyhow::Result<()> {
        use futures::SinkExt;
        match self {
            Self::Stdio { stdin, .. } => {
                let stdin = stdin.as_mut().context("stdin closed")?;
                stdin.write_all(text.as_bytes()).await?;
                stdin.write_all(b"\n").await?;
                stdin.flush().await?;
            }
            Self::WebSocket(stream) => stream.send(text.into()).await?,
        }
        Ok(())
    }

    pub async fn send(&mut self, message: Value) -> anyhow::Result<()> {
        self.send_text(&message.to_string()).await
    }

    /// The next message, or `None` when the server closed the connection.
    pub async fn recv(&mut self) -> anyhow::Result<Option<Value>> {
        use futures::StreamExt;
        use tokio_tungstenite::tungstenite::Message;
        let text = tokio::time::timeout(DEADLINE, async {
            match self {
                Self::Stdio { lines, .. } => anyhow::Ok(lines.next_line().await?),
                Self::WebSocket(stream) => loop {
                    match stream.next().await {
                        None | Some(Ok(Message::Close(_))) | Some(Err(_)) => return Ok(None),
                        Some(Ok(Message::Text(text))) => return Ok(Some(text.to_string())),
                        Some(Ok(_)) => {}
                    }
                },
            }
        })
        .await
        .context("no message from the server")??;
        text.map(|text| serde_json::from_str(&text).with_context(|| format!("bad JSON: {text}")))
            .transpose()
    }

    /// Sends a request and returns its response, skipping notifications.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> anyhow::Result<Value> {
        self.send(serde_json::json!({"id": id, "method": method, "params": params}))
            .await?;
        loop {
            let message = self.recv().await?.context("connection closed")?;
            if message.get("id") == Some(&Value::from(id)) {
                return Ok(message);
            }
        }
    }

    /// Performs the handshake.
    pub async fn initialize(&mut self) -> anyhow::Result<()> {
        let response = self
            .request(0, "initialize", serde_json::json!({"clientName": "raw"}))
            .await?;
        assert_eq!(response["result"]["protocolVersion"], "exec-server.v0");
        self.send(serde_json::json!({"method": "initialized", "params": {}}))
            .await
    }
}

/// A minimal environment for children: nothing from the test process leaks in.
pub fn base_env() -> BTreeMap<String, String> {
    [(
        "PATH".to_string(),
        "/usr/local/bin:/usr/bin:/bin".to_string(),
    )]
    .into()
}

/// `ExecParams` for a command on pipes, in `/`.
pub fn pipes(argv: &[&str]) -> ExecParams {
    ExecParams {
        argv: argv.iter().map(ToString::to_string).collect(),
        cwd: "/".into(),
        env: base_env(),
        tty: false,
        arg0: None,
        traceparent: None,
    }
}

/// `ExecParams` for a command on a PTY, in `/`.
pub fn tty(argv: &[&str]) -> ExecParams {
    ExecParams {
        tty: true,
        ..pipes(argv)
    }
}

/// Everything a process wrote, and its exit code.
#[derive(Debug, Default)]
pub struct Collected {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: Option<i32>,
}

impl Collected {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Reads events of `session` until it exits.
pub async fn collect(
    events: &mut broadcast::Receiver<ExecServerEvent>,
    session: &ExecSessionId,
) -> anyhow::Result<Collected> {
    let mut collected = Collected::default();
    tokio::time::timeout(DEADLINE, async {
        loop {
            match events.recv().await? {
                ExecServerEvent::Output {
                    session_id,
                    stream,
                    chunk,
                } if &session_id == session => match stream {
                    ExecOutputStream::Stdout => collected.stdout.extend_from_slice(&chunk),
                    ExecOutputStream::Stderr => collected.stderr.extend_from_slice(&chunk),
                },
                ExecServerEvent::Exited {
                    session_id,
                    exit_code,
                } if &session_id == session => {
                    collected.exit_code = Some(exit_code);
                    return anyhow::Ok(());
                }
                _ => {}
            }
        }
    })
    .await
    .with_context(|| format!("{session} did not exit; so far: {collected:?}"))??;
    Ok(collected)
}

/// Reads output of `session` until it contains `needle`; returns all output so far.
pub async fn output_until(
    events: &mut broadcast::Receiver<ExecServerEvent>,
    session: &ExecSessionId,
    needle: &str,
) -> anyhow::Result<String> {
    let mut seen = Vec::new();
    tokio::time::timeout(DEADLINE, async {
        loop {
            match events.recv().await? {
                ExecServerEvent::Output {
                    session_id, chunk, ..
                } if &session_id == session => {
                    seen.extend_from_slice(&chunk);
                    if String::from_utf8_lossy(&seen).contains(needle) {
                        return anyhow::Ok(());
                    }
                }
                ExecServerEvent::Exited { session_id, .. } if &session_id == session => {
                    bail!("exited before printing {needle:?}")
                }
                _ => {}
            }
        }
    })
    .await
    .with_context(|| {
        format!(
            "{session} never printed {needle:?}; got {:?}",
            String::from_utf8_lossy(&seen)
        )
    })??;
    Ok(String::from_utf8_lossy(&seen).into_owned())
}

/// `true` when `pid` no longer runs (gone, or a zombie no one reaps: the container's init
/// may not reap orphans).
pub fn pid_is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// Polls until every pid is dead, bounded by the deadline.
pub async fn wait_pids_dead(pids: &[i32]) -> anyhow::Result<()> {
    tokio::time::timeout(DEADLINE, async {
        let mut interval = tokio::time::interval(Duration::from_millis(20));
        loop {
            interval.tick().await;
            if pids.iter().all(|pid| pid_is_dead(*pid)) {
                return;
            }
        }
    })
    .await
    .with_context(|| {
        let alive: Vec<_> = pids.iter().filter(|pid| !pid_is_dead(**pid)).collect();
        format!("pids still alive: {alive:?}")
    })
}

/// Parses `N\n` lines printed by a shell (`echo $$`).
pub fn parse_pids(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .filter_map(|word| word.trim().parse().ok())
        .collect()
}

/// Generates a `_stdio` and a `_websocket` test from `async fn name(Transport)`.
macro_rules! both_transports {
    ($($name:ident),* $(,)?) => {
        mod stdio {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> anyhow::Result<()> {
                    super::$name($crate::suite::harness::Transport::Stdio).await
                }
            )*
        }
        mod websocket {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> anyhow::Result<()> {
                    super::$name($crate::suite::harness::Transport::WebSocket).await
                }
            )*
        }
    };
}
pub(crate) use both_transports;
