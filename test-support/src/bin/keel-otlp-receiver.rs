//! `keel-otlp-receiver`: an OTLP collector for benchmarks and manual checks. It prints its
//! HTTP base URL and its gRPC endpoint on stdout (one line each), takes exports until
//! Ctrl-C/SIGTERM, then prints on stderr how many log records, spans and metrics arrived.
//!
//! Exit codes: 0 after Ctrl-C/SIGTERM, 2 when it cannot start.

use std::io::Write;
use std::process::ExitCode;

use keel_test_support::OtlpReceiver;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let receiver = match OtlpReceiver::start().await {
        Ok(receiver) => receiver,
        Err(err) => {
            eprintln!("keel-otlp-receiver: {err}");
            return ExitCode::from(2);
        }
    };
    let base = receiver
        .http_endpoint("logs")
        .trim_end_matches("/v1/logs")
        .to_string();
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "{base}\n{}", receiver.grpc_endpoint())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    let Ok(mut terminate) = signal(SignalKind::terminate()) else {
        return ExitCode::from(2);
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    eprintln!(
        "keel-otlp-receiver: {} log records, {} spans, {} metrics",
        receiver.logs().len(),
        receiver.spans().len(),
        receiver.metrics().len()
    );
    ExitCode::SUCCESS
}
