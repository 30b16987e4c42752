//! The part of `keel exec` that is the same on a server in this process and on a `--remote`
//! one: open the thread the command line names (new, resumed or forked) and drive its turn.

use std::path::Path;
use std::process::ExitCode;

use keel_app_server::AppServerClient;
use keel_protocol::app_server::ThreadOverrides;

use super::args::ExecArgs;
use super::drive::{TurnRequest, drive};
use super::inputs::{TurnInput, output_of};
use super::session;

/// Opens the thread on `client` and runs the turn; `records` names where recorded sessions
/// are looked for, in messages; `warnings` go into the output stream.
pub(super) async fn run_one_turn<C: AppServerClient>(
    client: &C,
    args: &ExecArgs,
    turn: TurnInput,
    mut overrides: ThreadOverrides,
    records: &Path,
    cwd: &Path,
    warnings: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let TurnInput {
        session,
        input,
        output_schema,
    } = turn;
    let thread = match session {
        None => session::start(client, overrides, args.ephemeral).await?,
        Some(target) => {
            if args.cwd.is_none() {
                // A resumed or forked thread keeps its own directory unless `-C` moves it.
                overrides.cwd = None;
            }
            target
                .open(client, records, cwd, overrides, args.ephemeral)
                .await?
        }
    };
    drive(
        client,
        TurnRequest {
            thread,
            input,
            review: None,
            output_schema,
            last_message_file: args.output_last_message.as_deref(),
            warnings,
            elicitation: args.mcp_elicitation,
        },
        output_of(args),
    )
    .await
}
