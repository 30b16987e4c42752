//! `keel-exec-server`: the exec-server as a standalone binary.
//!
//! Exit codes: 0 after a clean shutdown, 1 when the server fails (the error chain is printed
//! on stderr), 2 for bad flags (clap, or authentication flags that cannot work or would
//! leave a network listener open).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use keel_exec_server::{ExecServerArgs, init_stderr_logging, run_main};

/// A process service over JSON-RPC (stdio or websocket).
#[derive(Debug, Parser)]
#[command(name = "keel-exec-server", version)]
struct Cli {
    #[command(flatten)]
    args: ExecServerArgs,
}

fn main() -> ExitCode {
    if let Some(status) = keel_exec_server::supervisor::dispatch() {
        return status;
    }
    let cli = Cli::parse();
    init_stderr_logging("warn");
    match run(cli.args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("keel-exec-server: {err:#}");
            let bad_flags = err
                .chain()
                .filter_map(|cause| cause.downcast_ref::<keel_exec_server::ExecServerError>())
                .any(keel_exec_server::ExecServerError::is_bad_flags);
            if bad_flags {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(args: ExecServerArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(run_main(args));
    // The stdin thread may still be blocked in read(2); it must not hold up the exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(result?)
}
