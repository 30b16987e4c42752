//! `keel`: the command-line front end to the Keel engine and its servers.

use clap::Parser;

/// Keel: an embeddable coding-agent engine.
#[derive(Debug, Parser)]
#[command(name = "keel", version, about, long_about = None)]
struct Cli {}

fn main() -> anyhow::Result<()> {
    let _cli = Cli::parse();
    Ok(())
}
