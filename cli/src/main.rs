//! `keel`: the command-line front end to the Keel engine and its servers.
//!
//! Exit codes: 0 on success, 1 when the task failed or was interrupted, 2 on bad usage or
//! configuration.

mod exec;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Keel: an embeddable coding-agent engine.
#[derive(Debug, Parser)]
#[command(name = "keel", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless: progress on stderr, the final message on stdout.
    Exec(exec::ExecArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("keel: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Exec(args) => exec::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("keel: {err:#}");
            ExitCode::from(2)
        }
    }
}
