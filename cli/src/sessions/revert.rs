//! `keel revert`: drop a recorded session's latest turns and, with `--files`, put the working
//! directory's files back as they were before them (the app-server's `thread/revert`).

use std::process::ExitCode;

use clap::Args;
use keel_protocol::app_server::{
    ThreadIdParams, ThreadResumeParams, ThreadRevertParams, client_request,
};

use super::{local_client, lookup};
use crate::failure::usage;

/// Arguments of `keel revert`.
#[derive(Debug, Args)]
pub struct RevertArgs {
    /// Session id (UUID) or thread name.
    #[arg(value_name = "SESSION")]
    session: String,
    /// How many of the latest turns to drop.
    #[arg(long, default_value_t = 1, conflicts_with = "before_turn")]
    turns: usize,
    /// Drop this turn and every later one instead.
    #[arg(long, value_name = "TURN_ID")]
    before_turn: Option<String>,
    /// Also restore the files those turns changed (refused, changing nothing, when someone
    /// else changed one of them since).
    #[arg(long)]
    files: bool,
}

/// Runs `keel revert`.
pub async fn revert(args: RevertArgs) -> anyhow::Result<ExitCode> {
    if args.turns == 0 {
        return Err(usage("--turns must be at least 1"));
    }
    let (client, _) = local_client().await?;
    let id = lookup::thread_id(&client, &args.session, false).await?;
    let resumed = client
        .request::<client_request::ThreadResume>(ThreadResumeParams {
            thread_id: id.clone(),
            overrides: Default::default(),
        })
        .await?;
    let turns = resumed.thread.turns;
    let before = match args.before_turn {
        Some(turn) => turn,
        None => {
            let index = turns.len().checked_sub(args.turns).ok_or_else(|| {
                usage(format!(
                    "session {id} has {} turns; cannot drop {}",
                    turns.len(),
                    args.turns
                ))
            })?;
            turns[index].id.clone()
        }
    };
    let reverted = client
        .request::<client_request::ThreadRevert>(ThreadRevertParams {
            thread_id: id.clone(),
            before_turn_id: before,
            restore_files: args.files,
        })
        .await;
    let _ = client
        .request::<client_request::ThreadUnsubscribe>(ThreadIdParams {
            thread_id: id.clone(),
        })
        .await;
    let reverted = reverted.map_err(|err| anyhow::anyhow!("keel revert: {err}"))?;
    for file in &reverted.restored_files {
        println!("restored {}", file.display());
    }
    println!("session {id} now has {} turns", reverted.thread.turns.len());
    Ok(ExitCode::SUCCESS)
}
