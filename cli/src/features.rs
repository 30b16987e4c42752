//! `keel features`: the switches under `[features]`, with their effective state, and
//! `enable`/`disable` writing them to `config.toml` (comments and layout kept).

use std::process::ExitCode;

use clap::Subcommand;
use keel_core::config::{ConfigEdit, ConfigEnv, MergeStrategy, write_config_edits};
use keel_core::{Config, ConfigOverrides, find_keel_home};

use crate::failure::usage;

/// `keel features` subcommands.
#[derive(Debug, Subcommand)]
pub enum FeaturesCommand {
    /// List the features Keel reads, with their stage and effective state.
    List,
    /// Turn a feature on in config.toml.
    Enable {
        /// The feature.
        feature: String,
    },
    /// Turn a feature off in config.toml.
    Disable {
        /// The feature.
        feature: String,
    },
}

/// Runs `keel features …`.
pub async fn run(command: FeaturesCommand) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let features = keel_core::features();
    let (feature, on) = match command {
        FeaturesCommand::List => {
            let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
            for feature in &features {
                let state = match feature.state_in(&config) {
                    Some(true) => "true",
                    Some(false) => "false",
                    None => "model default",
                };
                println!(
                    "{:<15} stable  {:<13} {}",
                    feature.name, state, feature.about
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
        FeaturesCommand::Enable { feature } => (feature, true),
        FeaturesCommand::Disable { feature } => (feature, false),
    };
    if !features.iter().any(|known| known.name == feature) {
        let names: Vec<&str> = features.iter().map(|known| known.name).collect();
        return Err(usage(format!(
            "unknown feature `{feature}`; Keel's features: {}",
            names.join(", ")
        )));
    }
    let written = write_config_edits(
        &home,
        &[ConfigEdit {
            key_path: format!("features.{feature}"),
            value: on.into(),
            merge: MergeStrategy::Replace,
        }],
        None,
        &ConfigEnv::from_process()?,
    )?;
    println!(
        "{feature} {} in {}",
        if on { "enabled" } else { "disabled" },
        written.path.display()
    );
    Ok(ExitCode::SUCCESS)
}
