//! `keel mcp-server`: serve MCP on stdio (see the keel-mcp-server crate).

use std::process::ExitCode;

use clap::Args;

/// Arguments of `keel mcp-server`.
#[derive(Debug, Args)]
pub struct McpServerArgs {
    /// Override a configuration value for every session, e.g. `-c model=o3`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,

    /// The longest input line accepted, in bytes; a longer one is skipped and answered with
    /// -32700.
    #[arg(long, default_value_t = keel_protocol::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,
}

/// Serves until the client closes stdin.
pub async fn run(args: McpServerArgs) -> anyhow::Result<ExitCode> {
    let options = keel_mcp_server::McpServerOptions {
        keel_home: None,
        config_overrides: args.config_overrides,
        max_line_bytes: Some(args.max_line_bytes),
    };
    keel_mcp_server::run_main(options).await?;
    Ok(ExitCode::SUCCESS)
}
