//! `keel-mcp-server`: the MCP server as a standalone binary (`keel mcp-server` runs the same
//! code). Arguments: any number of `-c key.path=value` overrides.
//!
//! Exit codes: 0 when the client closed stdin, 2 on bad arguments or configuration, 1 when
//! the server failed.

use std::process::ExitCode;

use keel_mcp_server::{McpServerError, McpServerOptions, run_main};

fn main() -> ExitCode {
    if let Some(status) = keel_exec_server::supervisor::dispatch() {
        return status;
    }
    keel_exec_server::init_stderr_logging("warn");
    let mut options = McpServerOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("-c" | "--config", Some(value)) => options.config_overrides.push(value),
            _ => {
                eprintln!("usage: keel-mcp-server [-c key.path=value]...");
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("keel-mcp-server: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(run_main(options));
    // stdin is read on a blocking thread that may still wait for input; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("keel-mcp-server: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            match err {
                McpServerError::Home(_)
                | McpServerError::Override(_)
                | McpServerError::Config { .. } => ExitCode::from(2),
                McpServerError::Read(_)
                | McpServerError::Write(_)
                | McpServerError::Task { .. } => ExitCode::from(1),
            }
        }
    }
}
