//! `keel app-server`: arguments and the server's main loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::connection::ConnectionLimits;
use crate::error::{AppServerError, Result};
use crate::state::{AppState, ServerConfig};
use crate::thread_backend::ThreadBackend;
use crate::transport::{serve_stdio, serve_unix_socket, serve_websocket};
use keel_exec_server::ExecServerError;
use keel_exec_server::listener_auth::{ListenerAuthArgs, ListenerGuard, ListenerKind};
use keel_protocol::app_server::SessionSource;

/// Where `unix://` without a path puts the socket, under the Keel home.
pub const DEFAULT_SOCKET: &str = "app-server-control/app-server.sock";

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppServerListen {
    /// JSON Lines on stdin/stdout.
    Stdio,
    /// A websocket server on this address.
    WebSocket(SocketAddr),
    /// A websocket server on a unix socket (mode 0600); `None` is [`DEFAULT_SOCKET`] under
    /// the Keel home.
    Unix(Option<PathBuf>),
}

impl std::str::FromStr for AppServerListen {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        if text == "stdio://" || text == "stdio" {
            return Ok(Self::Stdio);
        }
        if let Some(path) = text.strip_prefix("unix://") {
            return Ok(Self::Unix((!path.is_empty()).then(|| PathBuf::from(path))));
        }
        let Some(rest) = text.strip_prefix("ws://") else {
            return Err(format!(
                "unsupported listen URL `{text}`: expected `stdio://`, `ws://IP:PORT`, `unix://` or `unix://PATH`"
            ));
        };
        rest.trim_end_matches('/')
            .parse()
            .map(Self::WebSocket)
            .map_err(|err| format!("invalid address in `{text}`: {err} (expected ws://IP:PORT, e.g. ws://127.0.0.1:0)"))
    }
}

/// Arguments of `keel app-server`.
#[derive(Debug, Clone, clap::Args)]
pub struct AppServerArgs {
    /// `stdio://` (default), `ws://IP:PORT` (port 0 picks one; the address is printed on
    /// stderr; a non-loopback address needs `--ws-auth`), or `unix://[PATH]` (a socket only
    /// this user can open; default `KEEL_HOME/app-server-control/app-server.sock`).
    #[arg(long, default_value = "stdio://", value_parser = clap::value_parser!(AppServerListen))]
    pub listen: AppServerListen,

    /// Requests a connection may queue before new ones get -32001 "Server overloaded".
    #[arg(long, default_value_t = ConnectionLimits::default().queue_capacity)]
    pub request_queue_capacity: usize,

    /// Requests a connection may run at once.
    #[arg(long, default_value_t = ConnectionLimits::default().max_in_flight)]
    pub max_in_flight_requests: usize,

    /// The longest line (stdio) or websocket frame accepted, in bytes; a longer line is
    /// skipped and answered with -32700.
    #[arg(long, default_value_t = ConnectionLimits::default().max_line_bytes)]
    pub max_line_bytes: usize,

    /// Who may connect over `ws://` or `unix://`.
    #[command(flatten)]
    pub auth: ListenerAuthArgs,

    /// Hold every client request within this server's own sandbox, cwd and writable roots
    /// (same as `[app_server] clients_within_sandbox = true`; see docs/security.md).
    #[arg(long)]
    pub clients_within_sandbox: bool,

    /// On SIGTERM or SIGINT, keep serving the connected clients this many seconds with
    /// `/readyz` failing (so a load balancer sends no new ones) before stopping; a second
    /// signal stops at once. 0 (default): stop at once.
    #[arg(long, default_value_t = 0, value_name = "SECONDS")]
    pub drain_seconds: u64,

    /// Keep threads in this PostgreSQL database, shared with other app-servers, instead of
    /// rollout files under the Keel home: a `postgres://` URL or libpq `key=value` string,
    /// completed by `PG*` variables, a service file and the password file as libpq would.
    #[arg(long, value_name = "CONNINFO")]
    pub thread_store: Option<String>,

    /// This server's name in a shared thread store, told to a client whose resume finds a
    /// thread running a turn here. Default: the host name and process id.
    #[arg(long, value_name = "NAME", requires = "thread_store")]
    pub server_name: Option<String>,

    /// How long a running turn's lease on its thread lasts unless renewed (a third of it at
    /// a time, as the turn runs): after a server dies, another resumes its threads this long
    /// after its last renewal, and a resume waits this long (and a second) for a turn
    /// running elsewhere before answering with the server that holds it.
    #[arg(long, default_value_t = 30, value_name = "SECONDS", requires = "thread_store",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub thread_lease_seconds: u64,
}

impl AppServerArgs {
    fn limits(&self) -> ConnectionLimits {
        ConnectionLimits {
            queue_capacity: self.request_queue_capacity,
            max_in_flight: self.max_in_flight_requests,
            max_line_bytes: self.max_line_bytes,
        }
    }
}

/// Runs the server until stdin closes (stdio) or SIGINT/SIGTERM (websocket), then stops
/// every thread and the commands they run.
pub async fn run_main(
    args: AppServerArgs,
    keel_home: PathBuf,
    mut cli_overrides: Vec<(String, toml::Value)>,
) -> Result<()> {
    if args.clients_within_sandbox {
        cli_overrides.push((
            "app_server.clients_within_sandbox".to_string(),
            toml::Value::Boolean(true),
        ));
    }
    let cwd = std::env::current_dir().map_err(|err| {
        AppServerError::Transport(format!("cannot read the current directory: {err}"))
    })?;
    let kind = match args.listen {
        AppServerListen::Stdio => ListenerKind::Stdio,
        AppServerListen::WebSocket(addr) => ListenerKind::Tcp(addr),
        AppServerListen::Unix(_) => ListenerKind::UnixSocket,
    };
    // Before binding: an open network listener must never exist, even for a moment.
    let guard = ListenerGuard::new(&args.auth, kind).map_err(ExecServerError::from)?;
    let socket_path = match &args.listen {
        AppServerListen::Unix(Some(path)) => cwd.join(path),
        _ => keel_home.join(DEFAULT_SOCKET),
    };
    let threads = match &args.thread_store {
        Some(store) => shared_threads(store, &args).await?,
        None => ThreadBackend::Files,
    };
    let state = Arc::new(AppState::new(ServerConfig {
        keel_home,
        cli_overrides,
        cwd,
        // What Codex's app-server records, whatever the client: its TUI's default listing
        // (interactive threads) shows them.
        session_source: SessionSource::Vscode,
        deliver_queued_messages: true,
        client_backends: Default::default(),
        threads,
    }));
    state.follow_spawned_threads();
    state.follow_thread_changes();
    // A server's own metrics (its connections, its queue) are exported from the start, not
    // only once a thread is loaded. A configuration that does not load is reported by the
    // requests that need it.
    if let Ok(config) = state.resolve_config(&Default::default()) {
        state.manager.start_telemetry(&config.otel);
    }
    match args.listen {
        AppServerListen::Stdio => {
            tokio::select! {
                () = serve_stdio(state.clone(), args.limits()) => {}
                () = shutdown_signal() => {}
            }
        }
        AppServerListen::WebSocket(addr) => {
            let stop = drained(state.clone(), args.drain_seconds);
            serve_websocket(state.clone(), addr, args.limits(), guard, stop).await?;
        }
        AppServerListen::Unix(_) => {
            serve_unix_socket(
                state.clone(),
                socket_path,
                args.limits(),
                guard,
                drained(state.clone(), args.drain_seconds),
            )
            .await?;
        }
    }
    let ids: Vec<_> = state.threads.lock().await.keys().copied().collect();
    for id in ids {
        state.unload(id).await;
    }
    state.manager.shutdown_telemetry().await;
    Ok(())
}

/// The PostgreSQL thread store `store` names, for this server.
async fn shared_threads(store: &str, args: &AppServerArgs) -> Result<ThreadBackend> {
    let length = std::time::Duration::from_secs(args.thread_lease_seconds);
    // A resume waits a little over one lease: long enough for a dead server's to lapse.
    let mut lease = keel_core::ThreadLease {
        length,
        wait: length + std::time::Duration::from_secs(1),
        ..Default::default()
    };
    if let Some(name) = &args.server_name {
        lease.holder = name.clone();
    }
    let store = Arc::new(keel_core::PostgresThreadStore::connect(store, lease).await?);
    tracing::info!(
        store = store.describe(),
        "threads are kept in a shared store"
    );
    Ok(ThreadBackend::Shared {
        store: store.clone(),
        catalog: store,
    })
}

/// Resolves when the server should stop: at the first signal, or after draining for
/// `drain_seconds` once it came (a second signal cuts the drain short).
async fn drained(state: Arc<AppState>, drain_seconds: u64) {
    shutdown_signal().await;
    if drain_seconds == 0 {
        return;
    }
    state.start_draining();
    // Said on stderr, as the listening address is: operators and tests watch for it.
    eprintln!(
        "draining: /readyz fails for {drain_seconds} s while connected clients are served (a second signal stops at once)"
    );
    tokio::select! {
        () = tokio::time::sleep(std::time::Duration::from_secs(drain_seconds)) => {}
        () = shutdown_signal() => {}
    }
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(err) => {
            tracing::warn!("cannot watch SIGTERM: {err}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
