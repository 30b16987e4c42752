//! The command-line flags of an HTTP listener, shared by `keel mcp-server` and the standalone
//! `keel-mcp-server` binary.

use keel_exec_server::listener_auth::{ListenerAuthArgs, ListenerGuard, ListenerKind};

use crate::error::Result;
use crate::http::{DEFAULT_SESSION_IDLE_TIMEOUT, HttpListenOptions, parse_listen_url};

/// `--listen` and the listener's authentication flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ListenArgs {
    /// Serve MCP over Streamable HTTP at `http://IP:PORT/mcp` instead of stdio. Loopback
    /// addresses need no token; any other address requires `--ws-auth`.
    #[arg(long, value_name = "http://IP:PORT")]
    pub listen: Option<String>,

    /// End a session nobody has used for this many seconds (no request, no open stream, no
    /// running call).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_SESSION_IDLE_TIMEOUT.as_secs())]
    pub session_idle_timeout: u64,

    #[command(flatten)]
    /// Who may call (`--ws-auth` and friends, as for the websocket servers).
    pub auth: ListenerAuthArgs,
}

impl ListenArgs {
    /// The HTTP listener the flags describe; `None` for stdio. Fails on a bad URL or a
    /// network address without authentication.
    pub fn http(&self) -> Result<Option<HttpListenOptions>> {
        let Some(url) = &self.listen else {
            return Ok(None);
        };
        let address = parse_listen_url(url)?;
        let guard = ListenerGuard::new(&self.auth, ListenerKind::Tcp(address))?;
        Ok(Some(HttpListenOptions {
            address,
            guard,
            session_idle_timeout: std::time::Duration::from_secs(self.session_idle_timeout),
        }))
    }
}
