//! `keel app-server` and `keel exec-server`: thin wrappers over the server crates.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use keel_app_server::AppServerArgs;
use keel_core::{find_keel_home, parse_cli_override};

/// Arguments of `keel app-server`.
#[derive(Debug, Args)]
pub struct AppServerCommand {
    #[command(subcommand)]
    action: Option<AppServerAction>,

    #[command(flatten)]
    args: AppServerArgs,

    /// A configuration override, `key.path=value` (value parsed as TOML). Repeatable.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum AppServerAction {
    /// Write the JSON Schema of the app-server protocol.
    GenerateJsonSchema {
        /// Directory to write into (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
}

/// Runs `keel app-server`.
pub async fn app_server(command: AppServerCommand) -> anyhow::Result<ExitCode> {
    if let Some(AppServerAction::GenerateJsonSchema { out }) = command.action {
        keel_app_server::write_json_schema(&out)?;
        eprintln!("wrote the app-server JSON Schema to {}", out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let overrides = command
        .config_overrides
        .iter()
        .map(|raw| parse_cli_override(raw))
        .collect::<Result<Vec<_>, _>>()?;
    keel_app_server::run_main(command.args, home, overrides).await?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `keel exec-server`.
pub async fn exec_server(args: keel_exec_server::ExecServerArgs) -> anyhow::Result<ExitCode> {
    keel_exec_server::run_main(args).await?;
    Ok(ExitCode::SUCCESS)
}
