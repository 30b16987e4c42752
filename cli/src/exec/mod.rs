//! `keel exec`: run one task headless, as a client of the in-process app-server.
//!
//! Everything that can be checked is checked before the engine starts (config, prompt,
//! images, output schema), so a bad command line leaves no session behind. Then it starts,
//! resumes or forks a thread, runs one turn, prints it (readable progress, `codex exec
//! --json`'s JSON Lines, or Keel's own notifications), and ends on `turn/completed` for its
//! own thread and turn. Sub-agent threads' notifications are not printed (the human stream
//! counts them); on exit the sub-agents are shut down with the in-process server. No one is
//! there to answer approval requests, so the approval policy is `never` unless `--full-auto`
//! says otherwise; any request that still arrives is declined.

mod args;
pub(crate) mod drive;
mod inputs;
mod jsonl;
mod one_turn;
mod oss;
mod outcome;
pub(crate) mod remote;
pub(crate) mod render;
pub(crate) mod session;

use std::process::ExitCode;

use anyhow::Context;
use keel_app_server::{EventDelivery, InProcessAppServerClient, ServerConfig};
use keel_core::{Config, ConfigError, ConfigOverrides, find_keel_home, parse_cli_override};
use keel_protocol::SandboxPolicy;
use keel_protocol::app_server::{ClientInfo, SessionSource, ThreadOverrides};

use crate::failure::usage;
pub(crate) use args::Color;
pub use args::{EXEC_AFTER_HELP, ExecArgs, LocalProvider, UnattendedElicitation};
pub(crate) use inputs::{checked_cwd, colored, read_prompt};
use inputs::{checked_dir, thread_overrides, turn_input};

/// The model `--oss` runs when `-m` names none (Codex's default).
const DEFAULT_OSS_MODEL: &str = "gpt-oss:20b";
/// The same model as LM Studio names it.
const DEFAULT_LMSTUDIO_MODEL: &str = "openai/gpt-oss-20b";

/// Runs `keel exec` and returns the process exit code.
pub async fn run(args: ExecArgs) -> anyhow::Result<ExitCode> {
    if let Some(url) = args.remote.clone() {
        return remote::run(&args, &url).await;
    }
    if args.remote_auth_token_env.is_some() {
        return Err(usage("`--remote-auth-token-env` requires `--remote`"));
    }
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let mut cli_overrides = Vec::new();
    for raw in &args.config_overrides {
        cli_overrides.push(parse_cli_override(raw)?);
    }
    for (features, on) in [(&args.enable, true), (&args.disable, false)] {
        for feature in features {
            if feature.is_empty() || feature.contains(['.', '=', ' ']) {
                return Err(usage(format!(
                    "--enable/--disable: `{feature}` is not a feature name"
                )));
            }
            cli_overrides.push((format!("features.{feature}"), toml::Value::Boolean(on)));
        }
    }
    if let Some(profile) = &args.profile {
        cli_overrides.push(("profile".to_string(), toml::Value::String(profile.clone())));
    }
    if args.dangerously_bypass_hook_trust {
        eprintln!(
            "warning: --dangerously-bypass-hook-trust is on: enabled hooks run without review"
        );
        cli_overrides.push(("bypass_hook_trust".to_string(), toml::Value::Boolean(true)));
    }
    let mut model = args.model.clone();
    let local = args
        .local_provider
        .or(args.oss.then_some(LocalProvider::Ollama));
    if let Some(local) = local {
        let (provider, default_model) = match local {
            LocalProvider::Ollama => (keel_core::config::OSS_PROVIDER_ID, DEFAULT_OSS_MODEL),
            LocalProvider::Lmstudio => (
                keel_core::config::LMSTUDIO_PROVIDER_ID,
                DEFAULT_LMSTUDIO_MODEL,
            ),
        };
        cli_overrides.push((
            "model_provider".to_string(),
            toml::Value::String(provider.to_string()),
        ));
        model.get_or_insert_with(|| default_model.to_string());
    }
    let process_cwd = std::env::current_dir().context("reading the current directory")?;
    let cwd = match &args.cwd {
        Some(dir) => checked_cwd(dir)?,
        None => process_cwd.clone(),
    };
    let overrides = thread_overrides(&args, model, &cwd);
    let mut config = check_config(&home, &cli_overrides, &overrides, args.strict_config)?;
    let add_dirs = args
        .add_dirs
        .iter()
        .map(|dir| checked_dir("--add-dir", dir))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if !add_dirs.is_empty() {
        match &config.sandbox_policy {
            SandboxPolicy::WorkspaceWrite { writable_roots, .. } => {
                let mut roots: Vec<toml::Value> = writable_roots
                    .iter()
                    .map(|root| toml::Value::String(root.display().to_string()))
                    .collect();
                for dir in &add_dirs {
                    roots.push(toml::Value::String(dir.display().to_string()));
                }
                cli_overrides.push((
                    "sandbox_workspace_write.writable_roots".to_string(),
                    toml::Value::Array(roots),
                ));
                config = check_config(&home, &cli_overrides, &overrides, false)?;
            }
            other => eprintln!(
                "keel: warning: --add-dir has no effect: the sandbox is {}, not workspace-write",
                if matches!(other, SandboxPolicy::ReadOnly) {
                    "read-only"
                } else {
                    "danger-full-access"
                }
            ),
        }
    }
    // Everything the turn needs is read and checked before anything starts.
    let turn = turn_input(&args)?;
    if let Some(local) = local {
        oss::check_local_server(&config, local).await?;
        // The built-in local provider speaks Chat; an Ollama that serves Responses gets
        // Responses (as Codex's `--oss`). A `[model_providers.oss]` of the user's is kept.
        let built_in = keel_core::config::built_in_model_providers_with(None, None);
        let is_built_in = built_in
            .get(keel_core::config::OSS_PROVIDER_ID)
            .is_some_and(|oss| oss.name == config.model_provider.name);
        if local == LocalProvider::Ollama
            && is_built_in
            && oss::ollama_serves_responses(&config).await
        {
            let table = format!("model_providers.{}", keel_core::config::OSS_PROVIDER_ID);
            for (key, value) in [
                ("name", config.model_provider.name.clone()),
                ("base_url", config.model_provider.base_url().to_string()),
                ("wire_api", "responses".to_string()),
            ] {
                cli_overrides.push((format!("{table}.{key}"), toml::Value::String(value)));
            }
            tracing::debug!("the local Ollama serves the Responses API; --oss uses it");
        }
    }
    // Whoever reads stdout (a pipe to a script, a log) gets every event: a slow reader slows
    // the run down rather than thinning the stream.
    let client = InProcessAppServerClient::start_with_delivery(
        ServerConfig {
            keel_home: home.clone(),
            cli_overrides,
            cwd: process_cwd,
            session_source: SessionSource::Exec,
            deliver_queued_messages: false,
            client_backends: Default::default(),
            threads: Default::default(),
        },
        ClientInfo {
            name: "keel_exec".to_string(),
            title: None,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        None,
        EventDelivery::WaitForConsumer,
    )
    .await?;
    let warnings = config.warnings.iter().map(ToString::to_string).collect();
    one_turn::run_one_turn(&client, &args, turn, overrides, &home, &cwd, warnings).await
}

/// Loads the configuration the thread will run with, before anything starts: a bad file,
/// override or missing API key is a usage error (exit 2) that says what to do, and unknown
/// keys are shown as warnings.
pub(crate) fn check_config(
    home: &std::path::Path,
    cli_overrides: &[(String, toml::Value)],
    overrides: &ThreadOverrides,
    strict: bool,
) -> anyhow::Result<Config> {
    let config = Config::load(
        home,
        cli_overrides.to_vec(),
        ConfigOverrides {
            model: overrides.model.clone(),
            cwd: overrides.cwd.clone(),
            approval_policy: overrides.approval_policy,
            sandbox_mode: overrides.sandbox,
            ..ConfigOverrides::default()
        },
    )?;
    if strict && !config.warnings.is_empty() {
        let keys: Vec<String> = config.warnings.iter().map(ToString::to_string).collect();
        return Err(usage(format!("--strict-config: {}", keys.join("; "))));
    }
    for warning in &config.warnings {
        eprintln!("keel: warning: {warning}");
    }
    match config
        .model_provider
        .api_key(&keel_core::config::process_env)
    {
        Ok(_) => Ok(config),
        Err(err @ ConfigError::MissingEnvVar { .. }) => Err(usage(format!(
            "{err}\n\
             Ways to give Keel a model:\n  \
             - OpenAI: export OPENAI_API_KEY=..., or store it once with \
             `keel login --with-api-key` (keys: https://platform.openai.com/api-keys)\n  \
             - a local Ollama-compatible server on localhost:11434: \
             keel exec --oss [-m <model>] ...\n  \
             - no model at all: the mock model of the quick start in README.md\n\
             {}",
            where_providers_live(&config.config_file())
        ))),
        Err(err) => Err(err.into()),
    }
}

/// Where providers are configured, and how to start that file when it does not exist yet.
fn where_providers_live(file: &std::path::Path) -> String {
    if file.exists() {
        return format!("Providers are configured in {}", file.display());
    }
    let dir = file
        .parent()
        .map_or_else(|| ".".to_string(), |dir| dir.display().to_string());
    format!(
        "Providers are configured in {}, which does not exist yet (KEEL_HOME moves it): \
         create it with `mkdir -p {dir} && $EDITOR {}` (docs/configuration.md lists the keys)",
        file.display(),
        file.display()
    )
}
