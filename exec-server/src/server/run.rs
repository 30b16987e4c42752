//! `keel-exec-server` / `keel exec-server`: flags and the main loop.

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::listen::ListenUrl;
use super::processor::serve_connection;
use super::stdio::stdio_connection;
use super::websocket::serve_websocket;
use crate::config::ExecServerConfig;
use crate::error::{ExecServerError, Result};
use crate::listener_auth::{ListenerAuthArgs, ListenerGuard, ListenerKind};

/// Command-line flags of the exec-server.
#[derive(Debug, Clone, clap::Args)]
pub struct ExecServerArgs {
    /// Where to listen: `stdio://` (one connection on stdin/stdout) or `ws://IP:PORT`
    /// (port 0 picks a free port; the bound address is printed on stderr).
    #[arg(long, value_name = "URL", default_value = "stdio://")]
    pub listen: ListenUrl,

    /// Processes one connection may run at once.
    #[arg(long, value_name = "N", default_value_t = ExecServerConfig::default().max_processes)]
    pub max_processes: usize,

    /// Output bytes retained per process for `command/exec/snapshot` (head and tail).
    #[arg(long, value_name = "BYTES", default_value_t = ExecServerConfig::default().retained_output_bytes)]
    pub retained_output_bytes: usize,

    /// Milliseconds between SIGTERM and SIGKILL when stopping processes.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub shutdown_grace_ms: u64,

    /// Who may connect over `ws://`.
    #[command(flatten)]
    pub auth: ListenerAuthArgs,
}

impl ExecServerArgs {
    /// The server configuration these flags describe.
    pub fn config(&self) -> ExecServerConfig {
        ExecServerConfig {
            retained_output_bytes: self.retained_output_bytes,
            max_processes: self.max_processes,
            shutdown_grace: Duration::from_millis(self.shutdown_grace_ms),
            ..ExecServerConfig::default()
        }
    }
}

/// Runs the server until its stdio peer leaves or SIGTERM/SIGINT arrives; either way every
/// process of every connection is terminated and reaped before this returns.
///
/// With `stdio://`, stdin is read on a thread that may still be blocked when this returns:
/// the caller should exit the process promptly afterwards.
pub async fn run_main(args: ExecServerArgs) -> Result<()> {
    let config = args.config();
    crate::telemetry::install_from_env();
    let kind = match args.listen {
        ListenUrl::Stdio => ListenerKind::Stdio,
        ListenUrl::WebSocket(address) => ListenerKind::Tcp(address),
    };
    // Before binding: an open network listener must never exist, even for a moment.
    let guard = ListenerGuard::new(&args.auth, kind)?;
    let shutdown = CancellationToken::new();
    let signals = spawn_signal_listener(shutdown.clone())?;
    let result = match args.listen {
        ListenUrl::Stdio => {
            serve_connection(stdio_connection()?, config, shutdown.clone()).await;
            Ok(())
        }
        ListenUrl::WebSocket(address) => {
            let listener = TcpListener::bind(address)
                .await
                .map_err(ExecServerError::io("binding the websocket listener"))?;
            let bound = listener
                .local_addr()
                .map_err(ExecServerError::io("reading the bound address"))?;
            eprintln!("listening on ws://{bound}");
            eprintln!("  auth: {}", guard.describe());
            super::raise_open_file_limit();
            serve_websocket(listener, config, guard, shutdown.clone()).await;
            Ok(())
        }
    };
    signals.abort();
    crate::telemetry::shutdown().await;
    result
}

/// Cancels `shutdown` on the first SIGTERM or SIGINT.
fn spawn_signal_listener(shutdown: CancellationToken) -> Result<tokio::task::JoinHandle<()>> {
    let mut terminate = signal(SignalKind::terminate())
        .map_err(ExecServerError::io("installing a SIGTERM handler"))?;
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(ExecServerError::io("installing a SIGINT handler"))?;
    Ok(tokio::spawn(async move {
        let name = tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "stopping: terminating every process");
        shutdown.cancel();
    }))
}
