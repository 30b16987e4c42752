//! The checks `keel doctor` runs, each answering one [`Check`] line (or several, one per
//! server, hook problem or skill problem).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use keel_core::config::process_env;
use keel_core::hooks::load_hooks;
use keel_core::skills::{load_skills, skill_roots, user_home};
use keel_core::{Config, ConfigOverrides, ConversationManager};
use keel_protocol::SandboxPolicy;

use super::check::{Check, Status};

/// How long the provider may take to answer `GET /models`.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the MCP servers may take to start and list their tools, together.
const MCP_TIMEOUT: Duration = Duration::from_secs(60);
/// Free space under which `KEEL_HOME` is reported (rollouts and the job database grow there).
const LOW_SPACE_BYTES: u64 = 100 * 1024 * 1024;

/// Every check, in the order a run depends on them.
pub(crate) async fn run_all(
    home: &Path,
    cli_overrides: Vec<(String, toml::Value)>,
    cwd: Option<PathBuf>,
) -> Vec<Check> {
    let mut checks = vec![keel_home(home)];
    let overrides = ConfigOverrides {
        cwd,
        ..ConfigOverrides::default()
    };
    let config = match Config::load(home, cli_overrides, overrides) {
        Ok(config) => config,
        Err(err) => {
            checks.push(Check::new("config", Status::Fail, err.to_string()));
            checks.push(Check::new(
                "the rest",
                Status::Skip,
                "not checked: the configuration does not load",
            ));
            return checks;
        }
    };
    checks.push(Check::new(
        "config",
        Status::Ok,
        format!(
            "{} (model `{}`, provider `{}`, approvals `{}`, sandbox `{}`)",
            config.config_file().display(),
            config.model,
            config.model_provider_id,
            serde_plain(&config.approval_policy),
            sandbox_name(&config.sandbox_policy),
        ),
    ));
    checks.extend(
        config
            .warnings
            .iter()
            .map(|warning| Check::new("config", Status::Warn, warning.to_string())),
    );
    checks.push(provider(&config).await);
    checks.push(sandbox(&config).await);
    if let Some(check) = remote_environment(&config).await {
        checks.push(check);
    }
    checks.extend(mcp_servers(&config).await);
    checks.extend(hooks(&config));
    checks.extend(skills(&config));
    checks
}

/// A value's serde name (`on-request`), for messages.
fn serde_plain(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn sandbox_name(policy: &SandboxPolicy) -> &'static str {
    match policy {
        SandboxPolicy::ReadOnly => "read-only",
        SandboxPolicy::WorkspaceWrite { .. } => "workspace-write",
        SandboxPolicy::DangerFullAccess => "danger-full-access",
    }
}

/// `KEEL_HOME`: a directory this user can write, with room for rollouts.
fn keel_home(home: &Path) -> Check {
    let name = "keel home";
    match std::fs::metadata(home) {
        Err(err) => {
            return Check::new(
                name,
                Status::Fail,
                format!(
                    "{}: {err}\ncreate it with a config.toml (see docs/configuration.md), or set KEEL_HOME",
                    home.display()
                ),
            );
        }
        Ok(meta) if !meta.is_dir() => {
            return Check::new(
                name,
                Status::Fail,
                format!("{} is not a directory", home.display()),
            );
        }
        Ok(_) => {}
    }
    let probe = home.join(format!(".keel-doctor-{}", std::process::id()));
    if let Err(err) = std::fs::write(&probe, b"") {
        return Check::new(
            name,
            Status::Fail,
            format!(
                "{} is not writable: {err} (sessions are recorded there)",
                home.display()
            ),
        );
    }
    let _ = std::fs::remove_file(&probe);
    match rustix::fs::statvfs(home) {
        Ok(stats) => {
            let free = stats.f_bavail.saturating_mul(stats.f_frsize);
            let detail = format!("{} ({} MiB free)", home.display(), free / (1024 * 1024));
            if free < LOW_SPACE_BYTES {
                Check::new(
                    name,
                    Status::Warn,
                    format!("{detail}: low on space for session recordings"),
                )
            } else {
                Check::new(name, Status::Ok, detail)
            }
        }
        Err(err) => Check::new(
            name,
            Status::Warn,
            format!("{}: free space unknown ({err})", home.display()),
        ),
    }
}

/// The provider: its API key is set, it answers, it takes the key, and it lists the model.
async fn provider(config: &Config) -> Check {
    let name = "provider";
    let provider = &config.model_provider;
    let key = match provider.api_key(&process_env) {
        Ok(key) => key,
        Err(err) => return Check::new(name, Status::Fail, err.to_string()),
    };
    let models = match crate::provider_models::fetch(provider, key.as_deref(), PROVIDER_TIMEOUT)
        .await
    {
        Ok(models) => models,
        Err(err) => {
            let why = if err.is_timeout() {
                format!("no answer within {}s", PROVIDER_TIMEOUT.as_secs())
            } else if err.is_connect() {
                "cannot connect".to_string()
            } else {
                err.to_string()
            };
            return Check::new(
                name,
                Status::Fail,
                format!(
                    "`{}` at {}: {why}\ncheck `base_url` of [model_providers.{}] and that the server runs",
                    config.model_provider_id,
                    provider.base_url(),
                    config.model_provider_id
                ),
            );
        }
    };
    let status = models.status;
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        let var = provider.env_key.as_deref().unwrap_or("the provider's key");
        return Check::new(
            name,
            Status::Fail,
            format!(
                "`{}` refused the API key (HTTP {}): {}\ncheck {var}",
                config.model_provider_id,
                status.as_u16(),
                error_message(&models.body)
            ),
        );
    }
    if !status.is_success() {
        return Check::new(
            name,
            Status::Ok,
            format!(
                "`{}` at {} answers (HTTP {} for GET /models, so the model was not looked up)",
                config.model_provider_id,
                provider.base_url(),
                status.as_u16()
            ),
        );
    }
    if models.ids.is_empty() || models.has(&config.model) {
        Check::new(
            name,
            Status::Ok,
            format!(
                "`{}` at {} answers{}",
                config.model_provider_id,
                provider.base_url(),
                if models.ids.is_empty() {
                    String::new()
                } else {
                    format!(" and lists `{}`", config.model)
                }
            ),
        )
    } else {
        Check::new(
            name,
            Status::Warn,
            format!(
                "`{}` answers but does not list the model `{}` (it lists {})",
                config.model_provider_id,
                config.model,
                models.shown(8)
            ),
        )
    }
}

/// The `error.message` of an OpenAI-style error body, else the body's start.
fn error_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|json| json["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| body.chars().take(200).collect())
}

/// How long the remote exec-server may take to connect and run its check.
const REMOTE_TIMEOUT: Duration = Duration::from_secs(20);

/// With `exec_server_url`: the exec-server answers (with the token, if one is configured),
/// offers patches on its host, and has the sandbox helper the engine will wrap commands in.
async fn remote_environment(config: &Config) -> Option<Check> {
    use keel_exec_server::{ExecServerClient, ExecServerClientOptions};
    use keel_protocol::exec_server::{ExecParams, PATCH_EXTENSION, WaitParams};

    let url = config.exec_server_url.as_deref()?;
    let name = "exec-server";
    let url_shown = match &config.environment {
        Some(id) => format!("environment `{id}` ({url})"),
        None => url.to_string(),
    };
    let url = url_shown.as_str();
    let url_to_connect = config.exec_server_url.as_deref()?;
    // The token as a thread would send it: written in the configuration, in a file, or in a
    // variable.
    let token = match &config.exec_server_auth_token {
        Some(token) => Some(token.clone()),
        None => match keel_core::exec_server_bearer_token_from(
            config.exec_server_auth_token_env.as_deref(),
            config.exec_server_auth_token_file.as_deref(),
        ) {
            Ok(token) => token,
            Err(err) => return Some(Check::new(name, Status::Fail, format!("{url}: {err}"))),
        },
    };
    let options = ExecServerClientOptions {
        client_name: "keel doctor".to_string(),
        bearer_token: token,
        ..ExecServerClientOptions::default()
    };
    let checked = tokio::time::timeout(REMOTE_TIMEOUT, async {
        let client = ExecServerClient::connect_websocket(url_to_connect, options)
            .await
            .map_err(|err| format!("cannot connect: {err}"))?;
        if !client.supports(PATCH_EXTENSION) {
            return Err(format!(
                "it does not offer `{PATCH_EXTENSION}`: patches could not be written there \
                 (upgrade the server)"
            ));
        }
        if config.sandbox_policy == SandboxPolicy::DangerFullAccess {
            return Ok("reachable; commands and patches run there, without a sandbox".to_string());
        }
        let helper = config
            .sandbox_executable
            .clone()
            .or_else(keel_core::sandbox::default_sandbox_executable)
            .ok_or("no sandbox helper path to look for there")?;
        let helper = helper.display().to_string();
        let started = client
            .exec(ExecParams {
                argv: ["/bin/sh", "-c", "test -x \"$1\"", "sh", &helper]
                    .map(str::to_string)
                    .to_vec(),
                cwd: PathBuf::from("/"),
                env: std::collections::BTreeMap::new(),
                tty: false,
                arg0: None,
                traceparent: None,
            })
            .await
            .map_err(|err| format!("cannot run a command there: {err}"))?;
        let waited = client
            .wait(WaitParams {
                session_id: started.session_id,
                timeout_ms: Some(10_000),
            })
            .await
            .map_err(|err| format!("cannot run a command there: {err}"))?;
        match waited.exit_code {
            Some(0) => Ok(format!(
                "reachable; commands and patches run there, confined by the sandbox helper {helper}"
            )),
            _ => Err(format!(
                "the sandbox helper {helper} is not on that host: commands would fail to start \
                 (install keel there at the same path, or set sandbox_executable)"
            )),
        }
    })
    .await;
    Some(match checked {
        Ok(Ok(detail)) => Check::new(name, Status::Ok, format!("{url}: {detail}")),
        Ok(Err(problem)) => Check::new(name, Status::Fail, format!("{url}: {problem}")),
        Err(_) => Check::new(
            name,
            Status::Fail,
            format!("{url}: no answer within {REMOTE_TIMEOUT:?}"),
        ),
    })
}

/// The sandbox: the kernel can enforce the configured policy, and a command runs under it.
async fn sandbox(config: &Config) -> Check {
    let name = "sandbox";
    if config.sandbox_policy == SandboxPolicy::DangerFullAccess {
        return Check::new(
            name,
            Status::Ok,
            "danger-full-access: commands run without a sandbox",
        );
    }
    if let Err(err) = keel_core::sandbox::probe_kernel() {
        return Check::new(
            name,
            Status::Fail,
            format!(
                "this kernel cannot enforce `{}`: {err}\ncommands would need approval to run unconfined",
                sandbox_name(&config.sandbox_policy)
            ),
        );
    }
    // The helper the engine will start for the model's commands.
    let Some(helper) = config
        .sandbox_executable
        .clone()
        .or_else(keel_core::sandbox::default_sandbox_executable)
    else {
        return Check::new(
            name,
            Status::Fail,
            format!(
                "no sandbox helper: this binary is not named `keel` and no `{}` is beside it, \
                 so commands could not be confined; install it as `keel` or put the helper \
                 next to it",
                keel_core::sandbox::LINUX_SANDBOX_ARG0
            ),
        );
    };
    match crate::sandbox::probe_isolation(&helper, config, &config.sandbox_policy).await {
        Ok((status, report, _)) if status.success() => {
            let mode = sandbox_name(&config.sandbox_policy);
            match report {
                Some(report) => {
                    let (status, detail) = describe_isolation(&report);
                    Check::new(
                        name,
                        status,
                        format!(
                            "`{mode}` (Landlock and seccomp): a command ran confined; {detail}"
                        ),
                    )
                }
                None => Check::new(
                    name,
                    Status::Warn,
                    format!(
                        "`{mode}` (Landlock and seccomp): a command ran confined, but the helper \
                         {} did not say what isolation it got (an older keel?)",
                        helper.display()
                    ),
                ),
            }
        }
        Ok((status, _, stderr)) => Check::new(
            name,
            Status::Fail,
            format!(
                "`true` failed under the sandbox ({status}): {}; try `keel sandbox linux -- true`",
                stderr.trim()
            ),
        ),
        Err(err) => Check::new(name, Status::Fail, format!("{err:#}")),
    }
}

/// What the isolation report means for a user: what is protected, and what is not here.
fn describe_isolation(report: &crate::sandbox::IsolationReport) -> (Status, String) {
    let mut missing = Vec::new();
    if !report.pid_namespace {
        missing.push(if report.landlock_scopes {
            "no PID namespace: commands see every process of the user and their command lines \
             (Landlock keeps them from signalling any), and leftovers are hunted by the \
             supervisor through /proc"
        } else {
            "no PID namespace and no Landlock scopes (Linux 6.12+): commands see every process \
             of the user and can signal them, the process supervisor included"
        });
    } else if !report.own_proc {
        missing.push("no /proc of their own: commands can read other processes' command lines");
    }
    if !report.protected_folders {
        missing.push(
            "no mount namespace: .git, .codex, .agents and .aws are not protected when missing, \
             and a workspace that has one cannot run sandboxed",
        );
    }
    if missing.is_empty() {
        return (
            Status::Ok,
            "own PID namespace and /proc, protected folders read-only".to_string(),
        );
    }
    let why = report
        .missing
        .as_deref()
        .map(|why| format!(" ({why})"))
        .unwrap_or_default();
    (Status::Warn, format!("{}{why}", missing.join("; ")))
}

/// Each configured MCP server: it starts and lists its tools.
async fn mcp_servers(config: &Config) -> Vec<Check> {
    if config.mcp_servers.is_empty() {
        return vec![Check::new("mcp", Status::Ok, "no MCP servers configured")];
    }
    let manager = ConversationManager::with_env(Arc::new(process_env));
    let Ok(states) = tokio::time::timeout(MCP_TIMEOUT, manager.mcp_server_states(config)).await
    else {
        return vec![Check::new(
            "mcp",
            Status::Fail,
            format!(
                "the MCP servers did not all start within {}s",
                MCP_TIMEOUT.as_secs()
            ),
        )];
    };
    states
        .into_iter()
        .map(|state| {
            let name = format!("mcp:{}", state.name);
            if !state.enabled {
                return Check::new(name, Status::Skip, "enabled = false");
            }
            match state.tools {
                Ok(tools) => {
                    let names: Vec<&str> = tools
                        .iter()
                        .filter_map(|tool| tool["name"].as_str())
                        .collect();
                    Check::new(
                        name,
                        Status::Ok,
                        format!("{} tools: {}", names.len(), names.join(", ")),
                    )
                }
                Err(err) => Check::new(name, Status::Fail, err),
            }
        })
        .collect()
}

/// The hooks a thread in the working directory would have: problems loading them, and those
/// held back for lack of trust.
fn hooks(config: &Config) -> Vec<Check> {
    let inventory = load_hooks(
        &config.keel_home,
        &config.cwd,
        config.project_trusted(&config.cwd),
    );
    let held_back: Vec<_> = if config.bypass_hook_trust {
        Vec::new()
    } else {
        inventory.held_back().collect()
    };
    let mut checks = vec![Check::new(
        "hooks",
        Status::Ok,
        format!(
            "{} defined, {} will run{}",
            inventory.hooks.len(),
            inventory
                .hooks
                .iter()
                .filter(|hook| hook.runs(config.bypass_hook_trust))
                .count(),
            if config.project_trusted(&config.cwd) {
                ""
            } else {
                " (the project is not trusted: its own hooks are not loaded)"
            }
        ),
    )];
    checks.extend(
        inventory
            .warnings
            .iter()
            .map(|warning| Check::new("hooks", Status::Warn, warning.clone())),
    );
    checks.extend(held_back.into_iter().map(|hook| {
        Check::new(
            "hooks",
            Status::Warn,
            format!(
                "{} hook `{}` ({}) is {} and will not run; trust it in the Codex TUI's /hooks or add to {}:\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"",
                hook.event.config_name(),
                hook.handler.command,
                hook.source_path.display(),
                hook.trust.wire_name(),
                config.config_file().display(),
                hook.key,
                hook.current_hash
            ),
        )
    }));
    checks
}

/// The skills a thread in the working directory would be offered, and the files that fail.
fn skills(config: &Config) -> Vec<Check> {
    let inventory = load_skills(&skill_roots(
        &config.keel_home,
        user_home().as_deref(),
        &config.cwd,
        config.project_trusted(&config.cwd),
    ))
    .with_switches(&config.skill_switches);
    let off = inventory
        .skills
        .iter()
        .filter(|skill| !skill.enabled)
        .count();
    let mut checks = vec![Check::new(
        "skills",
        Status::Ok,
        format!(
            "{} found{}",
            inventory.skills.len(),
            if off > 0 {
                format!(", {off} turned off")
            } else {
                String::new()
            }
        ),
    )];
    checks.extend(inventory.errors.iter().map(|error| {
        Check::new(
            "skills",
            Status::Warn,
            format!(
                "{}: {} (the skill is left out)",
                error.path.display(),
                error.message
            ),
        )
    }));
    checks
}
