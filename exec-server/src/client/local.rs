//! Starting a local `keel-exec-server` binary and talking to it over its stdio.

use std::ffi::OsString;
use std::ops::Deref;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use super::{ExecServerClient, ExecServerClientOptions};
use crate::error::{ExecServerError, Result};

/// How [`spawn_local_exec_server`] starts the server.
#[derive(Debug, Clone, Default)]
pub struct LocalExecServerOptions {
    /// Extra arguments (e.g. `--max-processes 8`); the server listens on stdio regardless.
    pub args: Vec<OsString>,
    /// Handshake and event options of the client.
    pub client: ExecServerClientOptions,
}

/// A server process this program started, and the client connected to it.
///
/// Dropping it closes the connection and sends the server SIGTERM, on which it terminates
/// and reaps every process it started, then exits (it is reaped in the background).
pub struct LocalExecServer {
    client: Option<ExecServerClient>,
    child: Child,
}

/// Starts `program` (a `keel-exec-server` binary, or anything speaking the protocol on
/// stdio) with `--listen stdio://` and connects to it.
pub async fn spawn_local_exec_server(
    program: impl AsRef<Path>,
    options: LocalExecServerOptions,
) -> Result<LocalExecServer> {
    let program = program.as_ref();
    let mut child = Command::new(program)
        .args(&options.args)
        .args(["--listen", "stdio://"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(false)
        .spawn()
        .map_err(|source| ExecServerError::Spawn {
            program: program.display().to_string(),
            cwd: std::env::current_dir().unwrap_or_default(),
            source,
        })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ExecServerError::Protocol(
            "the spawned server has no stdio pipes".to_string(),
        ));
    };
    let mut server = LocalExecServer {
        client: None,
        child,
    };
    server.client = Some(ExecServerClient::connect_stdio(stdout, stdin, options.client).await?);
    Ok(server)
}

impl LocalExecServer {
    /// The connected client.
    pub fn client(&self) -> &ExecServerClient {
        match &self.client {
            Some(client) => client,
            None => unreachable_client(),
        }
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Closes the connection and waits for the server to exit (it first terminates its
    /// processes); sends SIGKILL if it takes longer than `timeout`.
    pub async fn shutdown(mut self, timeout: Duration) -> Result<std::process::ExitStatus> {
        self.client.take();
        let waited = tokio::time::timeout(timeout, self.child.wait()).await;
        match waited {
            Ok(status) => status.map_err(ExecServerError::io("waiting for the exec-server")),
            Err(_) => {
                self.child
                    .kill()
                    .await
                    .map_err(ExecServerError::io("killing the exec-server"))?;
                self.child
                    .wait()
                    .await
                    .map_err(ExecServerError::io("waiting for the exec-server"))
            }
        }
    }
}

/// The client is only taken by `shutdown` and `drop`, which consume the server.
fn unreachable_client() -> ! {
    panic!("LocalExecServer used after shutdown")
}

impl Deref for LocalExecServer {
    type Target = ExecServerClient;

    fn deref(&self) -> &ExecServerClient {
        self.client()
    }
}

impl Drop for LocalExecServer {
    fn drop(&mut self) {
        self.client.take();
        if let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok())
            && let Err(err) = kill(Pid::from_raw(pid), Signal::SIGTERM)
        {
            tracing::debug!(pid, %err, "could not signal the exec-server");
        }
    }
}
