//! `keel review`: a code review without a client — of the working tree, a branch or a commit
//! — printed on stdout, with an exit code a CI job can act on.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use keel_app_server::{EventDelivery, InProcessAppServerClient, ServerConfig};
use keel_core::{find_keel_home, parse_cli_override};
use keel_protocol::app_server::{ClientInfo, ReviewTarget, ThreadOverrides};
use keel_protocol::{AskForApproval, SandboxMode};

use crate::exec::drive::{Output, TurnRequest, drive};
use crate::exec::render::HumanRenderer;
use crate::failure::usage;

/// Exit codes, as `keel review --help` lists them.
pub const REVIEW_AFTER_HELP: &str = "\
Exit codes: 0 the review ran and found the patch correct (or gave no verdict); 3 the reviewer \
judged the patch incorrect; 1 the review failed or was interrupted; 2 bad usage (no target, \
not a git repository, an unknown branch or commit), nothing was run.

The review runs read-only, in a session of its own: `keel exec resume --last \"fix the \
findings\"` continues from its report.";

/// Arguments of `keel review`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").args(["uncommitted", "base", "commit", "prompt"])))]
pub struct ReviewArgs {
    /// Review the working tree: staged, unstaged and untracked files.
    #[arg(long)]
    pub uncommitted: bool,

    /// Review the current branch against this base branch.
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,

    /// Review the changes one commit introduced.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,

    /// A label for the commit under review (its subject, say).
    #[arg(long, requires = "commit")]
    pub title: Option<String>,

    /// Custom review instructions instead of a target (`-` reads them from stdin).
    pub prompt: Option<String>,

    /// The model to use.
    #[arg(short = 'm', long)]
    pub model: Option<String>,

    /// The repository to review (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// A configuration override, `key.path=value` (value parsed as TOML). Repeatable.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    pub config_overrides: Vec<String>,

    /// Fail on unknown configuration keys instead of warning.
    #[arg(long)]
    pub strict_config: bool,

    /// Run the review on an app-server elsewhere (`ws://host:port` or `wss://host:port`);
    /// its configuration applies.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,

    /// The environment variable holding the bearer token of `--remote`.
    #[arg(long, value_name = "ENV_VAR", requires = "remote")]
    pub remote_auth_token_env: Option<String>,
}

/// Runs `keel review` and returns the process exit code.
pub async fn run(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let mut cli_overrides = Vec::new();
    for raw in &args.config_overrides {
        cli_overrides.push(parse_cli_override(raw)?);
    }
    let target = if args.uncommitted {
        ReviewTarget::UncommittedChanges
    } else if let Some(branch) = args.base.clone() {
        ReviewTarget::BaseBranch { branch }
    } else if let Some(sha) = args.commit.clone() {
        ReviewTarget::Commit {
            sha,
            title: args.title.clone(),
        }
    } else if args.prompt.is_some() {
        ReviewTarget::Custom {
            instructions: crate::exec::read_prompt(args.prompt.clone())?,
        }
    } else {
        return Err(usage(
            "nothing to review: pass --uncommitted, --base BRANCH, --commit SHA or instructions",
        ));
    };
    let process_cwd = std::env::current_dir().context("reading the current directory")?;
    let cwd = match &args.cwd {
        Some(dir) => crate::exec::checked_cwd(dir)?,
        None => process_cwd.clone(),
    };
    // The reviewer reads; nothing it runs may change the repository.
    let overrides = ThreadOverrides {
        model: args.model.clone(),
        cwd: Some(cwd),
        sandbox: Some(SandboxMode::ReadOnly),
        approval_policy: Some(AskForApproval::Never),
        ..ThreadOverrides::default()
    };
    let output = Output::Human(HumanRenderer::new(crate::exec::colored(
        crate::exec::Color::Auto,
    )));
    if let Some(url) = &args.remote {
        if !args.config_overrides.is_empty() || args.strict_config {
            return Err(usage(
                "-c/--config, --strict-config configure a run in this process; with `--remote` \
                 the server's configuration applies (change it there)",
            ));
        }
        let client =
            crate::exec::remote::connect(url, args.remote_auth_token_env.as_deref(), "keel_review")
                .await?;
        let thread = crate::exec::session::start(&client, overrides, false).await?;
        return drive(&client, review_turn(thread, target, Vec::new()), output).await;
    }
    let config = crate::exec::check_config(&home, &cli_overrides, &overrides, args.strict_config)?;
    let client = InProcessAppServerClient::start_with_delivery(
        ServerConfig {
            keel_home: home,
            cli_overrides,
            cwd: process_cwd,
            session_source: keel_protocol::app_server::SessionSource::Exec,
            deliver_queued_messages: false,
            client_backends: Default::default(),
            threads: Default::default(),
        },
        ClientInfo {
            name: "keel_review".to_string(),
            title: None,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        None,
        EventDelivery::WaitForConsumer,
    )
    .await?;
    let thread = crate::exec::session::start(&client, overrides, false).await?;
    let warnings = config.warnings.iter().map(ToString::to_string).collect();
    drive(&client, review_turn(thread, target, warnings), output).await
}

/// The review turn on `thread`.
fn review_turn(
    thread: keel_protocol::app_server::ThreadStartResponse,
    target: ReviewTarget,
    warnings: Vec<String>,
) -> TurnRequest<'static> {
    TurnRequest {
        thread,
        input: Vec::new(),
        review: Some(target),
        output_schema: None,
        last_message_file: None,
        warnings,
        elicitation: crate::exec::UnattendedElicitation::Decline,
    }
}
