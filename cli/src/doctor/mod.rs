//! `keel doctor`: checks a setup without running a model, so a broken configuration, provider,
//! sandbox, MCP server, hook or skill is explained before a task fails on it. Prints one line
//! per check (or `--json`) and exits non-zero when something would stop a run.

mod check;
mod checks;

use std::path::PathBuf;
use std::process::ExitCode;

use check::Status;
use keel_core::{find_keel_home, parse_cli_override};

/// `keel doctor`'s flags.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Override a configuration value (`-c model="o4-mini"`); repeatable.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,

    /// The configuration profile to check.
    #[arg(short = 'p', long)]
    profile: Option<String>,

    /// The working directory to check for (project trust, hooks, skills); default: the
    /// current one.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cd: Option<PathBuf>,

    /// Print the results as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `keel doctor`: exit 0 when nothing fails, 1 otherwise (2 for a usage error).
pub async fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let mut cli_overrides = Vec::new();
    for raw in &args.config_overrides {
        cli_overrides.push(parse_cli_override(raw)?);
    }
    if let Some(profile) = &args.profile {
        cli_overrides.push(("profile".to_string(), toml::Value::String(profile.clone())));
    }
    let checks = checks::run_all(&home, cli_overrides, args.cd.clone()).await;
    let failed = checks.iter().any(|check| check.status == Status::Fail);
    if args.json {
        let report = serde_json::json!({
            "keelHome": home,
            "ok": !failed,
            "checks": checks,
        });
        println!("{report}");
    } else {
        let width = checks
            .iter()
            .map(|check| check.name.len())
            .max()
            .unwrap_or(0);
        for check in &checks {
            let mut lines = check.detail.lines();
            println!(
                "{:<4}  {:<width$}  {}",
                check.status.label(),
                check.name,
                lines.next().unwrap_or_default()
            );
            for line in lines {
                println!("{:<4}  {:<width$}  {line}", "", "");
            }
        }
        println!(
            "{}",
            if failed {
                "keel doctor: something above would stop a run (FAIL)"
            } else {
                "keel doctor: nothing stops a run"
            }
        );
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
