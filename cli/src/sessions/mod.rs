//! The recorded sessions under `KEEL_HOME`: `keel sessions` lists them, `keel archive`,
//! `keel unarchive` and `keel delete` manage one (by id or thread name, as Codex's commands
//! of the same names).

mod apply;
pub mod lookup;
mod revert;

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use keel_app_server::{InProcessAppServerClient, ServerConfig};
use keel_core::find_keel_home;
use keel_protocol::app_server::{
    ClientInfo, Thread, ThreadIdParams, ThreadListCwdFilter, ThreadListParams, client_request,
};

pub use apply::{ApplyArgs, apply};
pub use revert::{RevertArgs, revert};

/// Arguments of `keel sessions`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Sessions of every working directory, not only the current one.
    #[arg(long)]
    all: bool,
    /// List archived sessions instead.
    #[arg(long)]
    archived: bool,
    /// How many to show, newest first.
    #[arg(long, default_value_t = 25)]
    limit: u32,
    /// One JSON object per session (id, name, preview, cwd, updatedAt, path).
    #[arg(long)]
    json: bool,
}

/// Arguments of `keel archive`, `keel unarchive` and `keel delete`.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// Session id (UUID) or thread name; an id wins when both could match.
    #[arg(value_name = "SESSION")]
    session: String,
}

/// A client of an app-server in this process, for commands that read or change records.
pub(crate) async fn local_client() -> anyhow::Result<(InProcessAppServerClient, std::path::PathBuf)>
{
    let home = find_keel_home(std::env::var_os("KEEL_HOME").as_deref())?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let client = InProcessAppServerClient::start(
        ServerConfig {
            keel_home: home.clone(),
            cli_overrides: Vec::new(),
            cwd,
            // Reads and changes records only; a thread it started would be a person's.
            session_source: keel_protocol::app_server::SessionSource::Cli,
            deliver_queued_messages: false,
            client_backends: Default::default(),
            threads: Default::default(),
        },
        ClientInfo {
            name: "keel_cli".to_string(),
            title: None,
            version: env!("CARGO_PKG_VERSION").to_string(),
        },
        None,
    )
    .await?;
    Ok((client, home))
}

/// `keel sessions`.
pub async fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let (client, home) = local_client().await?;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let page = client
        .request::<client_request::ThreadList>(ThreadListParams {
            limit: Some(args.limit),
            cwd: (!args.all).then(|| ThreadListCwdFilter::One(cwd.clone())),
            archived: args.archived.then_some(true),
            source_kinds: lookup::top_level_kinds(),
            ..ThreadListParams::default()
        })
        .await?;
    if args.json {
        for thread in &page.data {
            println!("{}", summary(thread));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if page.data.is_empty() {
        let place = if args.all {
            String::new()
        } else {
            format!(" for {} (--all shows every directory)", cwd.display())
        };
        eprintln!(
            "no {}sessions under {}{place}",
            if args.archived { "archived " } else { "" },
            home.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    for thread in &page.data {
        let when = chrono::DateTime::from_timestamp(thread.updated_at, 0)
            .map(|at| at.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let title = thread
            .name
            .clone()
            .unwrap_or_else(|| one_line(&thread.preview));
        if args.all {
            println!("{}  {when}  {}  {title}", thread.id, thread.cwd.display());
        } else {
            println!("{}  {when}  {title}", thread.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `keel sessions --json` prints for one thread.
fn summary(thread: &Thread) -> serde_json::Value {
    serde_json::json!({
        "id": thread.id,
        "name": thread.name,
        "preview": thread.preview,
        "cwd": thread.cwd,
        "updatedAt": thread.updated_at,
        "path": thread.path,
    })
}

/// The first line of `text`, at most 60 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

/// `keel archive`: the session leaves the list (and `resume --last`) until unarchived.
pub async fn archive(args: SessionArg) -> anyhow::Result<ExitCode> {
    let (client, _) = local_client().await?;
    let id = lookup::thread_id(&client, &args.session, false).await?;
    client
        .request::<client_request::ThreadArchive>(ThreadIdParams {
            thread_id: id.clone(),
        })
        .await?;
    println!("archived {id}");
    Ok(ExitCode::SUCCESS)
}

/// `keel unarchive`.
pub async fn unarchive(args: SessionArg) -> anyhow::Result<ExitCode> {
    let (client, _) = local_client().await?;
    let id = lookup::thread_id(&client, &args.session, true).await?;
    client
        .request::<client_request::ThreadUnarchive>(ThreadIdParams {
            thread_id: id.clone(),
        })
        .await?;
    println!("unarchived {id}");
    Ok(ExitCode::SUCCESS)
}

/// `keel delete`: the session's record is removed for good, archived or not.
pub async fn delete(args: SessionArg) -> anyhow::Result<ExitCode> {
    let (client, _) = local_client().await?;
    let id = if uuid::Uuid::parse_str(&args.session).is_ok() {
        args.session.clone()
    } else {
        match lookup::find_by_name(&client, &args.session, false).await? {
            Some(id) => id,
            None => lookup::thread_id(&client, &args.session, true).await?,
        }
    };
    client
        .request::<client_request::ThreadDelete>(ThreadIdParams {
            thread_id: id.clone(),
        })
        .await?;
    println!("deleted {id}");
    Ok(ExitCode::SUCCESS)
}
