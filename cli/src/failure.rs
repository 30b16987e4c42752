//! How `keel` ends on an error: one `keel: ` prefix, the error's cause chain, and the
//! documented exit code — 2 for bad usage or configuration, 1 for anything that failed
//! while running.

use std::process::ExitCode;

/// A mistake in the command line or the environment the user must fix before anything runs.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Returns a [`UsageError`] with `message`, as an `anyhow` error.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// The exit code for `err`: 2 when a usage or configuration error is anywhere in its chain,
/// else 1.
pub fn exit_code(err: &anyhow::Error) -> ExitCode {
    let is_usage = err.chain().any(|cause| {
        cause.is::<UsageError>()
            || cause.is::<keel_core::ConfigError>()
            || cause
                .downcast_ref::<keel_exec_server::ExecServerError>()
                .is_some_and(keel_exec_server::ExecServerError::is_bad_flags)
            || cause
                .downcast_ref::<keel_app_server::AppServerError>()
                .is_some_and(keel_app_server::AppServerError::is_bad_flags)
    });
    ExitCode::from(if is_usage { 2 } else { 1 })
}

/// Prints `err` and its causes on one line, after the one prefix every `keel` error has.
pub fn report(err: &anyhow::Error) {
    eprintln!("keel: {}", one_line(err));
}

/// `err` and its causes joined by `: `, each cause once: a cause whose text an outer error
/// already shows (many errors repeat their source in their own message) is left out.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_shown_is_not_repeated() {
        let io = std::io::Error::other("Not a directory (os error 20)");
        let err = anyhow::Error::new(io)
            .context("config.toml: cannot read: Not a directory (os error 20)");
        assert_eq!(
            one_line(&err),
            "config.toml: cannot read: Not a directory (os error 20)"
        );
        let err = anyhow::anyhow!("refused").context("starting");
        assert_eq!(one_line(&err), "starting: refused");
    }
}
