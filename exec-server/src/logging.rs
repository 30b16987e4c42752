//! Logging for every Keel binary, set up the same way: `tracing` to stderr (stdout of a stdio
//! server carries protocol only), filtered by `KEEL_LOG`, else `RUST_LOG`, else the binary's
//! default, with colour only when stderr is a terminal so log files stay plain text.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The variable that sets the log filter of every Keel binary (`KEEL_LOG=debug`).
pub const LOG_ENV: &str = "KEEL_LOG";
/// The variable read when [`LOG_ENV`] is unset, as most Rust programs do.
pub const FALLBACK_LOG_ENV: &str = "RUST_LOG";

/// Installs the stderr logger; `default_filter` (e.g. `"warn"`) applies when neither variable
/// is set or parses. Calling it twice leaves the first logger in place.
pub fn init_stderr_logging(default_filter: &str) {
    let filter = [LOG_ENV, FALLBACK_LOG_ENV]
        .iter()
        .filter(|var| std::env::var_os(var).is_some_and(|value| !value.is_empty()))
        .find_map(|var| EnvFilter::try_from_env(var).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    let installed = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .try_init();
    if installed.is_err() {
        tracing::debug!("a logger was already installed");
    }
}
