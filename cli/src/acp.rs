//! `keel acp`: Keel as an Agent Client Protocol agent on stdio, for editors (see the keel-acp
//! crate and `docs/acp.md`).

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use keel_app_server::ServerConfig;
use keel_core::{find_keel_home, parse_cli_override};
use keel_protocol::app_server::SessionSource;

/// Arguments of `keel acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Override a configuration value for every session, e.g. `-c model=o3`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,
    /// Speak the draft ACP v2 to an editor that asks for it at `initialize` (the draft may
    /// still change; editors asking for v1 get v1 either way).
    #[arg(long)]
    protocol_v2: bool,
}

/// Serves the editor until it closes stdin.
pub async fn run(args: AcpArgs) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let mut cli_overrides = Vec::new();
    for raw in &args.config_overrides {
        cli_overrides.push(parse_cli_override(raw)?);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    keel_acp::run_stdio(
        ServerConfig {
            keel_home: home,
            cli_overrides,
            cwd,
            session_source: SessionSource::Cli,
            deliver_queued_messages: true,
            client_backends: Default::default(),
            threads: Default::default(),
        },
        keel_acp::AcpOptions {
            protocol_v2: args.protocol_v2,
        },
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
