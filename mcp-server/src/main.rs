//! `keel-mcp-server`: the MCP server as a standalone binary (`keel mcp-server` runs the same
//! code). Serves stdio, or Streamable HTTP with `--listen http://IP:PORT`.
//!
//! Exit codes: 0 when the client closed stdin (or the HTTP server was stopped), 2 on bad
//! arguments or configuration, 1 when the server failed.

use std::process::ExitCode;

use clap::Parser;
use keel_mcp_server::{
    ListenArgs, McpServerError, McpServerOptions, run_main, serve_http, shutdown_on_ctrl_c,
};

/// Keel as an MCP server.
#[derive(Debug, Parser)]
#[command(name = "keel-mcp-server")]
struct Args {
    /// Override a configuration value for every session, e.g. `-c model=o3`.
    #[arg(short = 'c', long = "config", value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,

    /// The longest input line (or HTTP body) accepted, in bytes; a longer line is skipped
    /// and answered with -32700, a longer body refused with 413.
    #[arg(long, default_value_t = keel_protocol::DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,

    #[command(flatten)]
    listen: ListenArgs,
}

fn main() -> ExitCode {
    if let Some(status) = keel_exec_server::supervisor::dispatch() {
        return status;
    }
    keel_exec_server::init_stderr_logging("warn");
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let options = McpServerOptions {
        config_overrides: args.config_overrides,
        max_line_bytes: Some(args.max_line_bytes),
        ..McpServerOptions::default()
    };
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
    let result = runtime.block_on(async {
        match args.listen.http()? {
            Some(listen) => serve_http(options, listen, shutdown_on_ctrl_c()).await,
            None => run_main(options).await,
        }
    });
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
                | McpServerError::Config { .. }
                | McpServerError::ListenUrl { .. }
                | McpServerError::ListenerAuth(_) => ExitCode::from(2),
                McpServerError::Listen { .. }
                | McpServerError::Read(_)
                | McpServerError::Write(_)
                | McpServerError::Task { .. } => ExitCode::from(1),
            }
        }
    }
}
