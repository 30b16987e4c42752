//! A throwaway desktop keyring: a private D-Bus session bus with GNOME Keyring on it, its
//! login keyring created and unlocked with a known password, all in a temporary directory.
//! Tests of `mcp_oauth_credentials_store = "keyring"` point Keel at it through
//! `DBUS_SESSION_BUS_ADDRESS`; the user's own keyring is never touched.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::error::{Error, Result};

/// How long the bus and the keyring may take to come up on busy cores.
const STARTUP: Duration = Duration::from_secs(60);

/// The programs the keyring needs (Debian: `dbus-daemon`, `gnome-keyring`, `libglib2.0-bin`).
const PROGRAMS: [&str; 3] = ["dbus-daemon", "gnome-keyring-daemon", "gdbus"];

/// A running session bus with GNOME Keyring; both stop when this is dropped.
pub struct SecretServiceSession {
    /// `DBUS_SESSION_BUS_ADDRESS` for the processes that should use this keyring.
    pub bus_address: String,
    _keyring: Child,
    _bus: Child,
    _dir: tempfile::TempDir,
}

fn failed(message: impl Into<String>) -> Error {
    Error::SecretService(message.into())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl SecretServiceSession {
    /// Whether the programs are installed.
    pub fn available() -> bool {
        PROGRAMS.iter().all(|program| on_path(program))
    }

    /// Starts the bus, then the keyring on it, and returns once the keyring owns its name.
    pub async fn start() -> Result<Self> {
        if let Some(missing) = PROGRAMS.iter().find(|program| !on_path(program)) {
            return Err(failed(format!(
                "`{missing}` is not installed (Debian: dbus-daemon, gnome-keyring, libglib2.0-bin)"
            )));
        }
        let dir = tempfile::Builder::new()
            .prefix("keel-keyring-")
            .tempdir()
            .map_err(|err| failed(format!("temporary directory: {err}")))?;
        let runtime = dir.path().join("run");
        std::fs::create_dir_all(&runtime)
            .map_err(|err| failed(format!("runtime directory: {err}")))?;
        std::fs::set_permissions(
            &runtime,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .map_err(|err| failed(format!("runtime directory: {err}")))?;
        // The bus socket lives in the temporary directory, so nothing is left in /tmp.
        let listen = format!("--address=unix:path={}", dir.path().join("bus").display());
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile", "--print-address=1"])
            .arg(&listen)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| failed(format!("starting dbus-daemon: {err}")))?;
        let stdout = bus
            .stdout
            .take()
            .ok_or_else(|| failed("dbus-daemon has no stdout"))?;
        let mut address = String::new();
        tokio::time::timeout(STARTUP, BufReader::new(stdout).read_line(&mut address))
            .await
            .map_err(|_| failed("dbus-daemon printed no address"))?
            .map_err(|err| failed(format!("reading dbus-daemon's address: {err}")))?;
        let bus_address = address.trim().to_string();
        if bus_address.is_empty() {
            return Err(failed("dbus-daemon exited without an address"));
        }
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| failed(format!("starting gnome-keyring-daemon: {err}")))?;
        // The login keyring's password, then end of input: it is created and unlocked.
        if let Some(mut stdin) = keyring.stdin.take() {
            stdin
                .write_all(b"keel-test-keyring")
                .await
                .map_err(|err| failed(format!("unlocking the keyring: {err}")))?;
        }
        let timeout = STARTUP.as_secs().to_string();
        let waited = tokio::time::timeout(
            STARTUP,
            Command::new("gdbus")
                .args(["wait", "--session", "--timeout", &timeout])
                .arg("org.freedesktop.secrets")
                .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .status(),
        )
        .await
        .map_err(|_| failed("the keyring did not appear on the bus"))?
        .map_err(|err| failed(format!("running gdbus wait: {err}")))?;
        if !waited.success() {
            return Err(failed(format!(
                "the keyring did not appear on the bus ({waited})"
            )));
        }
        Ok(Self {
            bus_address,
            _keyring: keyring,
            _bus: bus,
            _dir: dir,
        })
    }
}
