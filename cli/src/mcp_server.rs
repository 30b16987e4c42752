//! `keel mcp-server`: serve MCP on stdio, or over Streamable HTTP with `--listen` (see the
//! keel-mcp-server crate).

use std::process::ExitCode;

use clap::Args;
use keel_mcp_server::ListenArgs;

/// Arguments of `keel mcp-server`.
#[derive(Debug, Args)]
pub struct McpServerArgs {
    /// Override a configuration value for every session, e.g. `-c model=o3`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,

    /// The longest input line (or HTTP body) accepted, in bytes; a longer line is skipped
    /// and answered with -32700, a longer body refused with 413.
    #[arg(long, default_value_t = keel_protocol::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,

    #[command(flatten)]
    listen: ListenArgs,
}

/// Serves until the client closes stdin, or, over HTTP, until interrupted.
pub async fn run(args: McpServerArgs) -> anyhow::Result<ExitCode> {
    let options = keel_mcp_server::McpServerOptions {
        keel_home: None,
        config_overrides: args.config_overrides,
        max_line_bytes: Some(args.max_line_bytes),
    };
    match args.listen.http()? {
        Some(listen) => {
            let shutdown = keel_mcp_server::shutdown_on_ctrl_c();
            keel_mcp_server::serve_http(options, listen, shutdown).await?;
        }
        None => keel_mcp_server::run_main(options).await?,
    }
    Ok(ExitCode::SUCCESS)
}
