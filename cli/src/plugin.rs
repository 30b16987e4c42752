//! `keel plugin`: plugins and their marketplaces, with Codex 0.171's commands, flags and
//! messages (`codex plugin add|list|remove`, `codex plugin marketplace add|list|upgrade|remove`).
//! Enabling or disabling an installed plugin is `[plugins."PLUGIN@MARKETPLACE"] enabled` in
//! `config.toml`, as in Codex.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use keel_core::find_keel_home;
use keel_core::plugins::{
    PluginCatalog, PluginError, PluginId, PluginSource, PluginStatus, add_marketplace,
    install_plugin, load_catalog, remove_marketplace, uninstall_plugin, upgrade_marketplaces,
};
use serde_json::json;

use crate::failure::usage;

/// `keel plugin` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Install a plugin from an added marketplace.
    Add(PluginSelector),
    /// List the plugins of the added marketplaces.
    List(ListArgs),
    /// Uninstall a plugin and remove its installed copy.
    Remove(PluginSelector),
    /// Add, list, upgrade or remove plugin marketplaces.
    #[command(subcommand)]
    Marketplace(MarketplaceCommand),
}

/// A plugin named `PLUGIN@MARKETPLACE`, or `PLUGIN` with `--marketplace`.
#[derive(Debug, Args)]
pub struct PluginSelector {
    /// `PLUGIN@MARKETPLACE`, or `PLUGIN` with `--marketplace MARKETPLACE`.
    #[arg(value_name = "PLUGIN[@MARKETPLACE]")]
    plugin: String,
    /// The marketplace, when PLUGIN does not name it.
    #[arg(short = 'm', long)]
    marketplace: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// `keel plugin list` flags.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this marketplace's plugins.
    #[arg(short = 'm', long)]
    marketplace: Option<String>,
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// With --json, include plugins that are not installed.
    #[arg(long)]
    available: bool,
}

/// `keel plugin marketplace` subcommands.
#[derive(Debug, Subcommand)]
pub enum MarketplaceCommand {
    /// Add a marketplace: a local directory, owner/repo[@ref] on GitHub, or a git URL.
    Add {
        /// The directory or git location.
        source: String,
        /// The git ref to check out (git sources only).
        #[arg(long = "ref")]
        ref_name: Option<String>,
        /// Check out only these paths (git sources only; repeatable).
        #[arg(long = "sparse", value_name = "PATH")]
        sparse: Vec<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the added marketplaces and where their files are.
    List {
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fetch git marketplaces again (all of them without a name) and refresh the plugins
    /// installed from them.
    Upgrade {
        /// The marketplace.
        name: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a marketplace (plugins installed from it stay until removed).
    Remove {
        /// The marketplace.
        name: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn selector(args: &PluginSelector) -> anyhow::Result<PluginId> {
    PluginId::parse(&args.plugin, args.marketplace.as_deref()).map_err(|err| match err {
        PluginError::NoMarketplace | PluginError::MarketplaceMismatch { .. } => {
            usage(err.to_string())
        }
        other => other.into(),
    })
}

fn print_json(value: &serde_json::Value) {
    println!("{value}");
}

/// Runs a `keel plugin` command.
pub async fn run(command: PluginCommand) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    // Files and `git`: off the async threads.
    tokio::task::spawn_blocking(move || run_blocking(&home, command)).await?
}

fn run_blocking(home: &std::path::Path, command: PluginCommand) -> anyhow::Result<ExitCode> {
    match command {
        PluginCommand::Add(args) => {
            let id = selector(&args)?;
            let record = install_plugin(home, &id, &[])?;
            if args.json {
                print_json(&json!({
                    "pluginId": id.to_string(),
                    "name": id.plugin,
                    "marketplaceName": id.marketplace,
                    "version": record.version,
                    "installedPath": record.installed_path,
                    "authPolicy": record.auth_policy,
                }));
            } else {
                println!(
                    "Added plugin `{}` from marketplace `{}`.",
                    id.plugin, id.marketplace
                );
                println!("Installed plugin root: {}", record.installed_path.display());
            }
        }
        PluginCommand::Remove(args) => {
            let id = selector(&args)?;
            uninstall_plugin(home, &id)?;
            if args.json {
                print_json(&json!({
                    "pluginId": id.to_string(),
                    "name": id.plugin,
                    "marketplaceName": id.marketplace,
                }));
            } else {
                println!(
                    "Removed plugin `{}` from marketplace `{}`.",
                    id.plugin, id.marketplace
                );
            }
        }
        PluginCommand::List(args) => {
            let catalog = load_catalog(home, &[])?;
            report_load_errors(&catalog);
            list(&catalog, &args);
        }
        PluginCommand::Marketplace(command) => marketplace(home, command)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// A marketplace that does not load is said on stderr; the others are still listed.
fn report_load_errors(catalog: &PluginCatalog) {
    for (path, message) in &catalog.load_errors {
        eprintln!(
            "keel: marketplace at {} not loaded: {message}",
            path.display()
        );
    }
    for listing in &catalog.marketplaces {
        for skipped in &listing.marketplace.skipped {
            eprintln!("keel: plugin entry left out: {skipped}");
        }
    }
}

fn source_text(source: &PluginSource) -> String {
    match source {
        PluginSource::Local(path) => path.display().to_string(),
        PluginSource::Remote { shown, .. } => shown.clone(),
    }
}

fn list(catalog: &PluginCatalog, args: &ListArgs) {
    let shown: Vec<_> = catalog
        .marketplaces
        .iter()
        .filter(|listing| {
            args.marketplace
                .as_deref()
                .is_none_or(|name| listing.marketplace.name == name)
        })
        .collect();
    if args.json {
        let mut installed = Vec::new();
        let mut available = Vec::new();
        for listing in &shown {
            for plugin in &listing.plugins {
                let item = json!({
                    "pluginId": plugin.id.to_string(),
                    "name": plugin.id.plugin,
                    "marketplaceName": plugin.id.marketplace,
                    "version": plugin.installed_version,
                    "installed": plugin.status != PluginStatus::Available,
                    "enabled": plugin.status == PluginStatus::Enabled,
                    "source": source_text(&plugin.entry.source),
                    "installPolicy": plugin.entry.install_policy,
                    "authPolicy": plugin.entry.auth_policy,
                });
                if plugin.status == PluginStatus::Available {
                    if args.available {
                        available.push(item);
                    }
                } else {
                    installed.push(item);
                }
            }
        }
        print_json(&json!({ "installed": installed, "available": available }));
        return;
    }
    if shown.is_empty() {
        match &args.marketplace {
            Some(name) => println!("No plugins found in marketplace `{name}`."),
            None => println!("No marketplace plugins found."),
        }
        return;
    }
    for (index, listing) in shown.iter().enumerate() {
        if index > 0 {
            println!();
        }
        println!("Marketplace `{}`", listing.marketplace.name);
        println!("{}", listing.marketplace.manifest_path.display());
        println!();
        let rows: Vec<[String; 4]> = listing
            .plugins
            .iter()
            .map(|plugin| {
                let status = match plugin.status {
                    PluginStatus::Available => "not installed",
                    PluginStatus::Enabled => "installed, enabled",
                    PluginStatus::Disabled => "installed, disabled",
                };
                [
                    plugin.id.to_string(),
                    status.to_string(),
                    plugin.installed_version.clone().unwrap_or_default(),
                    source_text(&plugin.entry.source),
                ]
            })
            .collect();
        let header = ["PLUGIN", "STATUS", "VERSION", "SOURCE"].map(str::to_string);
        let widths: Vec<usize> = (0..4)
            .map(|column| {
                std::iter::once(&header)
                    .chain(rows.iter())
                    .map(|row| row[column].len())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(&header).chain(rows.iter()) {
            let line = format!(
                "{:w0$}  {:w1$}  {:w2$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            );
            println!("{}", line.trim_end());
        }
    }
}

fn marketplace(home: &std::path::Path, command: MarketplaceCommand) -> anyhow::Result<()> {
    match command {
        MarketplaceCommand::Add {
            source,
            ref_name,
            sparse,
            json,
        } => {
            let added = add_marketplace(home, &source, ref_name.as_deref(), &sparse)?;
            if json {
                print_json(&json!({
                    "marketplaceName": added.name,
                    "installedRoot": added.installed_root,
                    "alreadyAdded": added.already_added,
                }));
            } else if added.already_added {
                println!(
                    "Marketplace `{}` is already added from {}.",
                    added.name, added.source
                );
                println!(
                    "Installed marketplace root: {}",
                    added.installed_root.display()
                );
            } else {
                println!("Added marketplace `{}` from {}.", added.name, added.source);
                println!(
                    "Installed marketplace root: {}",
                    added.installed_root.display()
                );
            }
        }
        MarketplaceCommand::List { json } => {
            let catalog = load_catalog(home, &[])?;
            if !catalog.load_errors.is_empty() {
                let lines: Vec<String> = catalog
                    .load_errors
                    .iter()
                    .map(|(path, message)| format!("- at {}: {message}", path.display()))
                    .collect();
                anyhow::bail!("failed to load marketplace(s):\n{}", lines.join("\n"));
            }
            if json {
                let marketplaces: Vec<_> = catalog
                    .marketplaces
                    .iter()
                    .map(|listing| {
                        json!({
                            "name": listing.marketplace.name,
                            "root": listing.marketplace.root,
                            "manifestPath": listing.marketplace.manifest_path,
                            "sourceType": listing.setting.as_ref().map(|s| s.source_type.as_str()),
                            "source": listing.setting.as_ref().map(|s| s.source.clone()),
                        })
                    })
                    .collect();
                print_json(&json!({ "marketplaces": marketplaces }));
            } else if catalog.marketplaces.is_empty() {
                println!("No plugin marketplaces in scope.");
            } else {
                for listing in &catalog.marketplaces {
                    println!(
                        "{}  {}",
                        listing.marketplace.name,
                        listing.marketplace.root.display()
                    );
                }
            }
        }
        MarketplaceCommand::Upgrade { name, json } => {
            let upgraded = upgrade_marketplaces(home, name.as_deref())?;
            if json {
                print_json(&json!({
                    "selectedMarketplaces": upgraded.selected,
                    "upgradedRoots": upgraded.upgraded_roots,
                    "errors": upgraded.errors.iter().map(|(name, message)| json!({"marketplaceName": name, "message": message})).collect::<Vec<_>>(),
                }));
            } else if upgraded.selected.is_empty() {
                println!("No git marketplaces to upgrade.");
            } else {
                for root in &upgraded.upgraded_roots {
                    println!("Upgraded marketplace root: {}", root.display());
                }
                if upgraded.upgraded_roots.is_empty() {
                    println!("Marketplaces are up to date.");
                }
            }
            if !upgraded.errors.is_empty() {
                let lines: Vec<String> = upgraded
                    .errors
                    .iter()
                    .map(|(name, message)| format!("- `{name}`: {message}"))
                    .collect();
                anyhow::bail!("some marketplaces failed to upgrade:\n{}", lines.join("\n"));
            }
        }
        MarketplaceCommand::Remove { name, json } => {
            let removed = remove_marketplace(home, &name)?;
            if json {
                print_json(&json!({
                    "marketplaceName": removed.name,
                    "installedRoot": removed.removed_clone,
                }));
            } else {
                println!("Removed marketplace `{}`.", removed.name);
                if let Some(root) = &removed.removed_clone {
                    println!("Removed installed marketplace root: {}", root.display());
                }
            }
        }
    }
    Ok(())
}
