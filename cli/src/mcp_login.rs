//! `keel mcp login NAME` and `keel mcp logout NAME`: OAuth for remote MCP servers, as
//! `codex mcp login` does it. The sign-in page opens in the browser (`$BROWSER`, else the
//! platform's opener) and its URL is printed in any case; with `--no-browser` the user pastes
//! the URL the browser was sent back to.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use keel_core::config::McpServerConfig;
use keel_core::{Config, ConfigOverrides, McpLogin, mcp_logout};

use crate::failure::usage;

/// How long a login waits for the browser to come back.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The configured server `name`.
fn server(home: &Path, name: &str) -> anyhow::Result<McpServerConfig> {
    let config = Config::load(home, Vec::new(), ConfigOverrides::default())?;
    config.mcp_servers.get(name).cloned().ok_or_else(|| {
        usage(format!(
            "no MCP server `{name}` in {}",
            config.config_file().display()
        ))
    })
}

/// `keel mcp login --client-credentials`: a login without a user.
pub async fn login_client_credentials(
    home: &Path,
    name: &str,
    scopes: &[String],
) -> anyhow::Result<ExitCode> {
    let server = server(home, name)?;
    keel_core::mcp_login_client_credentials(name, &server, scopes)
        .await
        .map_err(|err| match err {
            keel_core::McpLoginError::NoClientSecret(_) => usage(err.to_string()),
            other => other.into(),
        })?;
    eprintln!("Logged in to `{name}` with its client credentials.");
    Ok(ExitCode::SUCCESS)
}

/// `keel mcp login`: signs in and keeps the tokens in the Keel home.
pub async fn login(
    home: &Path,
    name: &str,
    scopes: &[String],
    no_browser: bool,
    registration: keel_protocol::app_server::McpServerOauthClientRegistration,
) -> anyhow::Result<ExitCode> {
    let mut server = server(home, name)?;
    keel_core::choose_client_registration(name, &mut server, registration)
        .map_err(|err| usage(err.to_string()))?;
    let login = McpLogin::start(name, &server, scopes).await?;
    let url = login.authorization_url().to_string();
    if no_browser {
        eprintln!("Open this URL to sign in to `{name}`:\n\n  {url}\n");
        eprintln!(
            "Then paste the URL your browser was sent to (it may fail to load) and press Enter:"
        );
        let mut line = String::new();
        let read = tokio::task::spawn_blocking(move || {
            std::io::stdin().read_line(&mut line).map(|_| line)
        })
        .await??;
        login.finish(read.trim()).await?;
    } else {
        if !open_browser(&url) {
            eprintln!("Could not open a browser; open this URL to sign in to `{name}`:");
        } else {
            eprintln!("Opening the sign-in page for `{name}`; if it does not open, visit:");
        }
        eprintln!("\n  {url}\n");
        login.wait_for_callback(LOGIN_TIMEOUT).await?;
    }
    eprintln!("Logged in to `{name}`.");
    Ok(ExitCode::SUCCESS)
}

/// `keel mcp logout`: forgets the stored tokens.
pub async fn logout(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
    let server = server(home, name)?;
    if mcp_logout(name, &server).await? {
        eprintln!("Logged out of `{name}`.");
    } else {
        eprintln!("No login was stored for `{name}`.");
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with `$BROWSER`, else the platform's opener; `false` when none started.
fn open_browser(url: &str) -> bool {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|value| !value.is_empty());
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let program = browser.as_deref().unwrap_or(opener);
    std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .is_ok()
}
