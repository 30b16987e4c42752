//! A throwaway PostgreSQL cluster for tests against the real server: `initdb` in a temporary
//! directory, a free loopback port, password authentication. `initdb` and `postgres` refuse
//! to run as root, so under root both run as `nobody`. The server stops (immediate shutdown)
//! and its files go when the value is dropped.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::{Error, Result};

/// The uid and gid of `nobody` on Debian.
const NOBODY: u32 = 65534;
/// How long `initdb` plus start-up may take on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// The superuser the cluster is created with.
const USER: &str = "keel";

/// A running throwaway cluster.
pub struct PostgresCluster {
    server: Child,
    bin: PathBuf,
    port: u16,
    password: String,
    _dir: tempfile::TempDir,
}

fn failed(what: impl Into<String>) -> Error {
    Error::Postgres(what.into())
}

/// The directory of PostgreSQL's server binaries: `KEEL_POSTGRES_BIN`, else the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout) that has `initdb`.
pub fn postgres_bin_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("KEEL_POSTGRES_BIN") {
        return Some(PathBuf::from(dir)).filter(|dir| dir.join("initdb").is_file());
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Whether this process runs as root (its files' owner is uid 0).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// Runs as `nobody` when this process is root.
fn unprivileged(command: &mut Command) -> &mut Command {
    if is_root() {
        command.uid(NOBODY).gid(NOBODY);
    }
    command
}

fn chown_to_nobody(path: &Path) -> Result<()> {
    if is_root() {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY))
            .map_err(|err| failed(format!("chown {}: {err}", path.display())))?;
    }
    Ok(())
}

impl PostgresCluster {
    /// [`Self::start`] for tests built only where PostgreSQL is installed or under CI: a
    /// missing installation is an error naming how to get one.
    pub fn start_required() -> Result<Self> {
        Self::start()?.ok_or_else(|| {
            failed("PostgreSQL is not installed; .ci/run installs it (or set KEEL_POSTGRES_BIN)")
        })
    }

    /// Creates and starts a cluster whose superuser `keel` has a random password; `None`
    /// when PostgreSQL is not installed.
    pub fn start() -> Result<Option<Self>> {
        let Some(bin) = postgres_bin_dir() else {
            return Ok(None);
        };
        let dir = tempfile::Builder::new()
            .prefix("keel-pg-")
            .tempdir()
            .map_err(|err| failed(format!("temporary directory: {err}")))?;
        chown_to_nobody(dir.path())?;
        let password: String = {
            use rand::Rng;
            let mut rng = rand::rng();
            (0..24)
                .map(|_| char::from(rng.sample(rand::distr::Alphanumeric)))
                .collect()
        };
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, format!("{password}\n"))
            .map_err(|err| failed(format!("password file: {err}")))?;
        chown_to_nobody(&pwfile)?;
        let data = dir.path().join("data");
        let initdb = unprivileged(
            Command::new(bin.join("initdb"))
                .arg("-D")
                .arg(&data)
                .args([
                    "-U",
                    USER,
                    "--auth=scram-sha-256",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ])
                .arg(format!("--pwfile={}", pwfile.display()))
                .env("LC_ALL", "C")
                .current_dir(dir.path())
                .stdin(Stdio::null()),
        )
        .output()
        .map_err(|err| failed(format!("running initdb: {err}")))?;
        if !initdb.status.success() {
            return Err(failed(format!(
                "initdb failed ({}): {}",
                initdb.status,
                String::from_utf8_lossy(&initdb.stderr)
            )));
        }
        // A free port is found by binding and letting go, so another process may take it
        // before the server binds it: then the server exits at once and a new port is tried.
        let mut last = String::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .map_err(|err| failed(format!("finding a free port: {err}")))?
                .port();
            match start_server(&bin, &data, dir.path(), port)? {
                Started::Ready(server) => {
                    return Ok(Some(Self {
                        server,
                        bin,
                        port,
                        password,
                        _dir: dir,
                    }));
                }
                Started::PortTaken(log) => last = log,
            }
        }
        Err(failed(format!(
            "postgres could not bind a free port three times:\n{last}"
        )))
    }

    /// The cluster's URL, without the password (give it through `PGPASSWORD`).
    pub fn url(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The superuser's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs `sql` with `psql` and returns its unaligned, tuples-only output.
    pub fn psql(&self, sql: &str) -> Result<String> {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.url())
            .args(["-c", sql])
            .env("PGPASSWORD", &self.password)
            .stdin(Stdio::null())
            .output()
            .map_err(|err| failed(format!("running psql: {err}")))?;
        if !output.status.success() {
            return Err(failed(format!(
                "psql failed on {sql:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }
}

/// How a start-up attempt ended.
enum Started {
    Ready(Child),
    /// The port was taken before the server could bind it; its log.
    PortTaken(String),
}

/// Starts `postgres` on `data` at `port` and waits until it accepts connections.
fn start_server(bin: &Path, data: &Path, dir: &Path, port: u16) -> Result<Started> {
    let mut server = unprivileged(
        Command::new(bin.join("postgres"))
            .arg("-D")
            .arg(data)
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-k"])
            .arg(dir)
            .args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=200",
            ])
            .env("LC_ALL", "C")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .spawn()
    .map_err(|err| failed(format!("starting postgres: {err}")))?;
    let stderr = server
        .stderr
        .take()
        .ok_or_else(|| failed("postgres has no stderr"))?;
    let (ready_tx, ready_rx) = mpsc::channel();
    // Reads the server's log for as long as it runs (a full pipe would stall it).
    std::thread::spawn(move || {
        let mut log = Vec::new();
        for line in BufReader::new(stderr)
            .lines()
            .map_while(std::io::Result::ok)
        {
            if line.contains("ready to accept connections") {
                let _ = ready_tx.send(Ok(()));
            } else {
                log.push(line);
                if log.len() > 50 {
                    log.remove(0);
                }
            }
        }
        let _ = ready_tx.send(Err(log.join("\n")));
    });
    match ready_rx.recv_timeout(START_TIMEOUT) {
        Ok(Ok(())) => Ok(Started::Ready(server)),
        Ok(Err(log)) => {
            let _ = server.wait();
            if log.contains("could not bind") || log.contains("already in use") {
                Ok(Started::PortTaken(log))
            } else {
                Err(failed(format!("postgres exited at start-up:\n{log}")))
            }
        }
        Err(_) => {
            let _ = server.kill();
            let _ = server.wait();
            Err(failed(format!(
                "postgres was not ready within {START_TIMEOUT:?}"
            )))
        }
    }
}

impl Drop for PostgresCluster {
    fn drop(&mut self) {
        // SIGQUIT: immediate shutdown; the server's own processes end with it.
        if let Ok(pid) = i32::try_from(self.server.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGQUIT,
            );
        }
        let _ = self.server.wait();
    }
}
