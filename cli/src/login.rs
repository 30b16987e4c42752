//! `keel login` and `keel logout`: keep an OpenAI API key in the Keel home, in Codex's file and
//! with Codex's messages (on stderr; stdout stays empty), so a person logs in once.
//!
//! Keel logs in with an API key only: Codex's ChatGPT sign-in and device code need OpenAI's
//! account service.

use std::io::Read;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use keel_core::config::{read_stored_api_key, remove_stored_api_key, store_api_key};
use keel_core::find_keel_home;

use crate::failure::usage;

/// Arguments of `keel login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Read an API key from stdin and store it (`printenv OPENAI_API_KEY | keel login
    /// --with-api-key`).
    #[arg(long)]
    pub with_api_key: bool,

    #[command(subcommand)]
    pub command: Option<LoginCommand>,
}

/// What `keel login` does besides storing a key.
#[derive(Debug, Subcommand)]
pub enum LoginCommand {
    /// Show whether a key is stored (exit 1 when none is).
    Status,
}

/// Runs `keel login`.
pub async fn login(args: LoginArgs) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    if let Some(LoginCommand::Status) = args.command {
        return Ok(match read_stored_api_key(&home)? {
            Some(key) => {
                eprintln!("API key configured - {}", key.masked());
                eprintln!("Authentication is checked when you send a request.");
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("Not logged in");
                ExitCode::FAILURE
            }
        });
    }
    if !args.with_api_key {
        return Err(usage(
            "Keel logs in with an API key: `printenv OPENAI_API_KEY | keel login \
             --with-api-key` (ChatGPT sign-in is not offered)",
        ));
    }
    eprintln!("Reading API key from stdin...");
    let mut key = String::new();
    std::io::stdin().read_to_string(&mut key)?;
    if key.trim().is_empty() {
        eprintln!("No API key provided via stdin.");
        return Ok(ExitCode::FAILURE);
    }
    store_api_key(&home, &key)?;
    eprintln!("API key saved. Authentication is checked when you send a request.");
    Ok(ExitCode::SUCCESS)
}

/// Runs `keel logout`: removes the stored key (saying so when there was none).
pub async fn logout() -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    if remove_stored_api_key(&home)? {
        eprintln!("Successfully logged out");
    } else {
        eprintln!("Not logged in");
    }
    Ok(ExitCode::SUCCESS)
}
