//! HAProxy (Debian's package) in front of test servers, configured as an operator of a Keel
//! fleet would: HTTP mode (a websocket becomes a tunnel once upgraded), least connections,
//! and health checks on `/readyz` with a `Host` header (a server marked down gets no new
//! clients; the tunnels it has are left to it, so a draining server finishes with its
//! clients). It runs in the foreground (`haproxy -db`) on a free loopback port; its health-check
//! log lines on stderr tell the test when a server is up or down.

use std::path::PathBuf;

use crate::{Error, JsonLinesProcess, ProcessBuilder, Result};

/// Where Debian installs HAProxy, or the first `haproxy` on `PATH`.
pub fn haproxy_binary() -> Option<PathBuf> {
    let packaged = PathBuf::from("/usr/sbin/haproxy");
    if packaged.is_file() {
        return Some(packaged);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("haproxy"))
            .find(|candidate| candidate.is_file())
    })
}

/// A running balancer; stopped when dropped.
pub struct Haproxy {
    process: JsonLinesProcess,
    address: String,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts a balancer in front of `servers` (`host:port` each, named `k1`, `k2`, ... in
    /// its logs) and waits until every one passed a health check.
    pub async fn start(servers: &[String]) -> Result<Self> {
        let binary =
            haproxy_binary().ok_or_else(|| Error::Haproxy("haproxy is not installed".into()))?;
        let failed = |what: &str, err: std::io::Error| Error::Haproxy(format!("{what}: {err}"));
        let dir = tempfile::tempdir().map_err(|err| failed("a temporary folder", err))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|err| failed("a free port", err))?
            .port();
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, config_text(port, servers))
            .map_err(|err| failed("writing its configuration", err))?;
        let mut process = ProcessBuilder::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(config.as_os_str())
            .spawn()?;
        for n in 1..=servers.len() {
            wait_for(
                &mut process,
                &format!("Health check for server keel/k{n} succeeded"),
            )
            .await?;
        }
        Ok(Self {
            process,
            address: format!("127.0.0.1:{port}"),
            _dir: dir,
        })
    }

    /// The balancer's `host:port`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Waits until server `n` (1-based) is marked down.
    pub async fn wait_until_down(&mut self, n: usize) -> Result<()> {
        wait_for(&mut self.process, &format!("Server keel/k{n} is DOWN")).await
    }

    /// What the balancer logged so far.
    pub fn log(&self) -> String {
        self.process.stderr()
    }
}

async fn wait_for(process: &mut JsonLinesProcess, text: &str) -> Result<()> {
    process
        .wait_for_stderr_line(text, |line| line.contains(text))
        .await
        .map(|_| ())
}

/// The configuration: one frontend, one backend of `servers`.
fn config_text(port: u16, servers: &[String]) -> String {
    let mut text = format!(
        "global
    log stderr format raw local0 info
defaults
    mode http
    log global
    option log-health-checks
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout tunnel 1h
    timeout client-fin 5s
frontend fleet
    bind 127.0.0.1:{port}
    default_backend keel
backend keel
    balance leastconn
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    default-server check inter 500ms fall 2 rise 1
"
    );
    for (n, server) in servers.iter().enumerate() {
        text.push_str(&format!("    server k{} {server}\n", n + 1));
    }
    text
}
