//! keel-acp: Keel as an Agent Client Protocol (ACP v1, and the draft v2 when asked for) agent
//! for editors. An editor starts `keel acp` and speaks JSON-RPC 2.0 on its stdin and stdout, one message per line; each ACP
//! session is a Keel thread of an app-server running in this process (the in-process client),
//! so configuration, providers, sandbox and approvals are exactly those of `keel exec`.
//!
//! Data flow: the reader hands each editor message to the [`agent`] (requests run on their own
//! tasks, so a long prompt never blocks a cancel); the app-server's events go through the
//! translation in [`updates`] into `session/update` notifications, and its approval requests
//! become `session/request_permission` requests ([`permissions`]); everything the agent sends
//! goes through one writer, so stdout carries whole protocol lines only.

mod agent;
mod auth;
mod commands;
mod editor;
mod error;
mod history;
mod mcp_servers;
mod modes;
mod options;
mod permissions;
mod prompt;
mod session_setup;
mod sessions;
mod subagents;
mod updates;
mod v2;
mod wire;

pub use error::AcpError;
pub use options::AcpOptions;

use keel_app_server::ServerConfig;

/// Serves one editor on stdin and stdout until stdin closes.
pub async fn run_stdio(config: ServerConfig, options: AcpOptions) -> Result<(), AcpError> {
    serve(tokio::io::stdin(), tokio::io::stdout(), config, options).await
}

/// Serves one editor on `input` and `output` until `input` ends.
pub async fn serve<R, W>(
    input: R,
    output: W,
    config: ServerConfig,
    options: AcpOptions,
) -> Result<(), AcpError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    agent::Agent::start(config, options, output)
        .await?
        .run(input)
        .await
}
