//! `keel exec --remote URL`: the same turn, driven on an app-server in another process (as
//! `codex exec --remote`). The server's configuration, providers and sandbox apply; what the
//! command line would change locally (`-c`, profiles, local providers, extra writable
//! directories) is refused rather than silently ignored.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use keel_app_server::RemoteAppServerClient;
use keel_exec_server::{BearerToken, token_may_go_to};
use keel_protocol::app_server::ClientInfo;

use super::args::ExecArgs;
use super::inputs::{checked_cwd, thread_overrides, turn_input};
use super::one_turn::run_one_turn;
use crate::failure::usage;

/// Runs `keel exec` against the app-server at `url`.
pub(super) async fn run(args: &ExecArgs, url: &str) -> anyhow::Result<ExitCode> {
    let local_only = [
        ("-c/--config", !args.config_overrides.is_empty()),
        (
            "--enable/--disable",
            !args.enable.is_empty() || !args.disable.is_empty(),
        ),
        ("-p/--profile", args.profile.is_some()),
        (
            "--oss/--local-provider",
            args.oss || args.local_provider.is_some(),
        ),
        ("--add-dir", !args.add_dirs.is_empty()),
        ("--strict-config", args.strict_config),
        (
            "--dangerously-bypass-hook-trust",
            args.dangerously_bypass_hook_trust,
        ),
    ];
    let refused: Vec<&str> = local_only
        .iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| *flag)
        .collect();
    if !refused.is_empty() {
        return Err(usage(format!(
            "{} configure a run in this process; with `--remote` the server's configuration \
             applies (change it there)",
            refused.join(", ")
        )));
    }
    let cwd = match &args.cwd {
        Some(dir) => checked_cwd(dir)?,
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let overrides = thread_overrides(args, args.model.clone(), &cwd);
    let turn = turn_input(args)?;
    let client = connect(url, args.remote_auth_token_env.as_deref(), "keel_exec").await?;
    run_one_turn(
        &client,
        args,
        turn,
        overrides,
        Path::new(url),
        &cwd,
        Vec::new(),
    )
    .await
}

/// Connects to the app-server at `url` as client `name`, with the bearer token in the
/// environment variable `token_env` when one is named: usage errors for an address that is
/// not a websocket, a token that would cross the network in the clear, or an unset variable.
pub(crate) async fn connect(
    url: &str,
    token_env: Option<&str>,
    name: &str,
) -> anyhow::Result<RemoteAppServerClient> {
    // `unix://` alone is the socket `keel app-server --listen unix://` makes in the home.
    let url = if url == "unix://" {
        let home = keel_core::find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
        format!(
            "unix://{}",
            home.join(keel_app_server::DEFAULT_SOCKET).display()
        )
    } else {
        url.to_string()
    };
    let url = url.as_str();
    let unix = url.starts_with("unix://");
    if !(url.starts_with("ws://") || url.starts_with("wss://") || unix) {
        return Err(usage(format!(
            "invalid remote address `{url}`; expected `ws://host:port`, `wss://host:port`, \
             `unix://` or `unix://PATH`"
        )));
    }
    let token = match token_env {
        None => None,
        Some(var) => {
            // A unix socket never leaves this machine.
            if !unix && !token_may_go_to(url) {
                return Err(usage(
                    "`--remote-auth-token-env` requires a `wss://` or loopback `ws://` remote",
                ));
            }
            let value = std::env::var(var)
                .ok()
                .filter(|value| !value.trim().is_empty())
                .ok_or_else(|| usage(format!("environment variable `{var}` is not set")))?;
            Some(BearerToken::new(&value))
        }
    };
    Ok(RemoteAppServerClient::connect(
        url,
        token.as_ref(),
        ClientInfo {
            name: name.to_string(),
            title: None,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        None,
    )
    .await?)
}
