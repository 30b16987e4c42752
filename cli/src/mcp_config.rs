//! `keel mcp`: the MCP servers in `config.toml` (`[mcp_servers.NAME]`), listed, shown, added
//! and removed as Codex's `codex mcp` does. Edits keep the file's comments and layout, and a
//! change that would not load is refused with the file untouched.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use keel_core::config::{
    ConfigEdit, ConfigEnv, McpServerConfig, McpServerTransport, MergeStrategy, write_config_edits,
};
use keel_core::{Config, ConfigOverrides, find_keel_home};

use crate::failure::usage;

/// `--oauth-client-registration` values (Codex's).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ClientRegistrationArg {
    /// What the authorization server accepts, in the spec's order.
    Auto,
    /// The configured client ID metadata document (`oauth.client_metadata_url`).
    Cimd,
    /// Dynamic client registration.
    Dcr,
}

impl From<ClientRegistrationArg> for keel_protocol::app_server::McpServerOauthClientRegistration {
    fn from(arg: ClientRegistrationArg) -> Self {
        match arg {
            ClientRegistrationArg::Auto => Self::Auto,
            ClientRegistrationArg::Cimd => Self::Cimd,
            ClientRegistrationArg::Dcr => Self::Dcr,
        }
    }
}

/// `keel mcp` subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the configured servers.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one server.
    Get {
        /// The server's name.
        name: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a server (or replace the one of that name).
    Add(AddArgs),
    /// Remove a server.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Sign in to a server that asks for OAuth; the tokens are kept in the Keel home.
    Login {
        /// The server's name.
        name: String,
        /// Scopes to ask for, comma-separated (default: the server's `scopes`, else what it
        /// asks for).
        #[arg(long, value_delimiter = ',')]
        scopes: Vec<String>,
        /// Print the sign-in URL and read the URL the browser was sent back to from stdin.
        #[arg(long)]
        no_browser: bool,
        /// How Keel identifies itself to the authorization server: `auto` (what the server
        /// accepts, in the spec's order), `cimd` (the configured client ID metadata
        /// document), `dcr` (dynamic registration).
        #[arg(long, value_name = "MODE", default_value = "auto")]
        oauth_client_registration: ClientRegistrationArg,
        /// Log in without a browser with the configured `oauth.client_id` and
        /// `oauth.client_secret` (the OAuth client-credentials grant), for unattended use.
        #[arg(long, conflicts_with = "no_browser")]
        client_credentials: bool,
    },
    /// Forget a server's stored login.
    Logout {
        /// The server's name.
        name: String,
    },
}

/// `keel mcp add NAME (--url URL | -- COMMAND...)`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name (letters, digits, `-` and `_`).
    name: String,
    /// A Streamable HTTP server at this URL.
    #[arg(long, conflicts_with = "command", required_unless_present = "command")]
    url: Option<String>,
    /// With `--url`: the variable holding a bearer token for it.
    #[arg(long, value_name = "ENV_VAR", requires = "url")]
    bearer_token_env_var: Option<String>,
    /// With a command: a variable to set for it, `KEY=VALUE`. Repeatable.
    #[arg(long = "env", value_name = "KEY=VALUE", conflicts_with = "url")]
    env: Vec<String>,
    /// The program to start and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `keel mcp …`.
pub async fn run(command: McpCommand) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    match command {
        McpCommand::List { json } => {
            let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
            if json {
                let all: serde_json::Map<String, serde_json::Value> = config
                    .mcp_servers
                    .iter()
                    .map(|(name, server)| (name.clone(), describe(server)))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else if config.mcp_servers.is_empty() {
                eprintln!(
                    "no MCP servers in {} (add one with `keel mcp add NAME -- COMMAND`)",
                    config.config_file().display()
                );
            } else {
                for (name, server) in &config.mcp_servers {
                    let state = if server.enabled { "" } else { "  (disabled)" };
                    println!("{name}  {}{state}", target(server));
                }
            }
        }
        McpCommand::Get { name, json } => {
            let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
            let server = config.mcp_servers.get(&name).ok_or_else(|| {
                usage(format!(
                    "no MCP server `{name}` in {}",
                    config.config_file().display()
                ))
            })?;
            if json {
                println!("{}", serde_json::to_string_pretty(&describe(server))?);
            } else {
                println!(
                    "{name}\n  {}\n  enabled: {}",
                    target(server),
                    server.enabled
                );
            }
        }
        McpCommand::Add(args) => {
            check_name(&args.name)?;
            let table = match &args.url {
                Some(url) => {
                    let mut table = serde_json::json!({ "url": url });
                    if let Some(var) = &args.bearer_token_env_var {
                        table["bearer_token_env_var"] = var.clone().into();
                    }
                    table
                }
                None => {
                    let Some((program, rest)) = args.command.split_first() else {
                        return Err(usage(
                            "keel mcp add: give --url URL or -- COMMAND [ARGS...]",
                        ));
                    };
                    let mut env = serde_json::Map::new();
                    for pair in &args.env {
                        let (key, value) = pair
                            .split_once('=')
                            .ok_or_else(|| usage(format!("--env {pair}: expected KEY=VALUE")))?;
                        env.insert(key.to_string(), value.into());
                    }
                    let mut table = serde_json::json!({ "command": program, "args": rest });
                    if !env.is_empty() {
                        table["env"] = env.into();
                    }
                    table
                }
            };
            let written = edit(&home, &args.name, table)?;
            println!("added MCP server `{}` to {}", args.name, written.display());
        }
        McpCommand::Login {
            name,
            scopes,
            no_browser,
            oauth_client_registration,
            client_credentials,
        } => {
            if client_credentials {
                return crate::mcp_login::login_client_credentials(&home, &name, &scopes).await;
            }
            let registration = oauth_client_registration.into();
            return crate::mcp_login::login(&home, &name, &scopes, no_browser, registration).await;
        }
        McpCommand::Logout { name } => return crate::mcp_login::logout(&home, &name).await,
        McpCommand::Remove { name } => {
            let config = Config::load(&home, Vec::new(), ConfigOverrides::default())?;
            if !config.mcp_servers.contains_key(&name) {
                return Err(usage(format!(
                    "no MCP server `{name}` in {}",
                    config.config_file().display()
                )));
            }
            let written = edit(&home, &name, serde_json::Value::Null)?;
            println!("removed MCP server `{name}` from {}", written.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Server names become TOML keys and tool-name prefixes: keep them plain.
fn check_name(name: &str) -> anyhow::Result<()> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        Ok(())
    } else {
        Err(usage(format!(
            "`{name}` is not a valid server name: use letters, digits, `-` and `_`"
        )))
    }
}

/// Sets (or, with `null`, removes) `[mcp_servers.NAME]`.
fn edit(
    home: &std::path::Path,
    name: &str,
    table: serde_json::Value,
) -> anyhow::Result<std::path::PathBuf> {
    let written = write_config_edits(
        home,
        &[ConfigEdit {
            key_path: format!("mcp_servers.{name}"),
            value: table,
            merge: MergeStrategy::Replace,
        }],
        None,
        &ConfigEnv::from_process()?,
    )?;
    Ok(written.path)
}

/// How the server is reached, in one line.
fn target(server: &McpServerConfig) -> String {
    match &server.transport {
        McpServerTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        McpServerTransport::StreamableHttp { url, .. } => url.clone(),
    }
}

/// The server as JSON (no secrets: `env` values are masked, variables only named).
fn describe(server: &McpServerConfig) -> serde_json::Value {
    let transport = match &server.transport {
        McpServerTransport::Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
        } => serde_json::json!({
            "type": "stdio", "command": command, "args": args,
            "env": env.keys().map(|key| (key.clone(), "*****".into()))
                .collect::<serde_json::Map<String, serde_json::Value>>(),
            "env_vars": env_vars, "cwd": cwd,
        }),
        McpServerTransport::StreamableHttp {
            url,
            bearer_token_env_var,
            ..
        } => serde_json::json!({
            "type": "streamable_http", "url": url,
            "bearer_token_env_var": bearer_token_env_var,
        }),
    };
    serde_json::json!({
        "enabled": server.enabled,
        "required": server.required,
        "startup_timeout_sec": server.startup_timeout.as_secs_f64(),
        "tool_timeout_sec": server.tool_timeout.as_secs_f64(),
        "transport": transport,
    })
}
